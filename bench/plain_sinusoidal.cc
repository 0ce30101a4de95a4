// The plain sinusoidal peer (baselines.h), in its own file: it is built with -ffast-math as well,
// which lets GCC call glibc's vector sinf/cosf (libmvec), as a user chasing speed would.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "bench/baselines.h"
#include "bench/plain_elements.h"

namespace posenc::bench {

void plain_sinusoidal(void* out, const void* x, Element e, const int64_t* positions, int64_t tokens,
                      int64_t width, double base, int threads) {
  static float* omega = nullptr;  // grows only; one caller at a time
  static int64_t capacity = 0;
  const int64_t half = width / 2;
  if (half > capacity) {
    std::free(omega);
    capacity = half;
    omega = static_cast<float*>(std::malloc(static_cast<size_t>(capacity) * sizeof(float)));
  }
  for (int64_t i = 0; i < half; ++i)
    omega[i] = std::pow(static_cast<float>(base), -2.0f * static_cast<float>(i) / width);
  plain::with_element(e, [&](auto element) {
    using E = decltype(element);
    E* o = static_cast<E*>(out);
    const E* xs = static_cast<const E*>(x);
    plain::over_rows(tokens, threads, [&](int64_t t) {
      // A pure f32 loop (vectorized with libmvec's sinf/cosf), then the interleave and the add.
      float sines[4096], cosines[4096];
      const float p = static_cast<float>(positions ? positions[t] : t);
      E* row = o + t * width;
      const E* xr = xs ? xs + t * width : nullptr;
      for (int64_t i0 = 0; i0 < half; i0 += 4096) {
        const int64_t n = std::min<int64_t>(4096, half - i0);
        // Two loops: GCC would fuse a sin and a cos of one angle into a scalar sincosf.
        for (int64_t i = 0; i < n; ++i) sines[i] = std::sin(p * omega[i0 + i]);
        for (int64_t i = 0; i < n; ++i) cosines[i] = std::cos(p * omega[i0 + i]);
        E* r = row + 2 * i0;
        if (xr) {
          const E* xi = xr + 2 * i0;
          for (int64_t i = 0; i < n; ++i) {
            r[2 * i] = plain::narrow<E>(plain::widen(xi[2 * i]) + sines[i]);
            r[2 * i + 1] = plain::narrow<E>(plain::widen(xi[2 * i + 1]) + cosines[i]);
          }
        } else {
          for (int64_t i = 0; i < n; ++i) {
            r[2 * i] = plain::narrow<E>(sines[i]);
            r[2 * i + 1] = plain::narrow<E>(cosines[i]);
          }
        }
      }
    });
  });
}

}  // namespace posenc::bench
