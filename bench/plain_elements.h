// Element types of the plain peers (baselines.h), shared by the two files that build them with
// -march=native: f32, f16 as _Float16, and bf16 as its bits, rounded to nearest even by integer
// arithmetic as c10::BFloat16 does (GCC 12's __bf16 has no arithmetic).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "bench/baselines.h"

namespace posenc::bench::plain {

struct Bf16 {
  uint16_t bits;
};

inline float widen(float x) { return x; }
inline float widen(_Float16 x) { return static_cast<float>(x); }
inline float widen(Bf16 x) {
  const uint32_t u = uint32_t{x.bits} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <class E>
inline E narrow(float f) {
  if constexpr (std::is_same_v<E, Bf16>) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);  // nearest even (NaN not special-cased, as c10's fast path)
    return Bf16{static_cast<uint16_t>(u >> 16)};
  } else {
    return static_cast<E>(f);
  }
}

// f(E{}) with E the element type of `e`.
template <class F>
void with_element(Element e, F&& f) {
  switch (e) {
    case Element::bf16:
      return f(Bf16{});
    case Element::f16:
      return f(_Float16{});
    default:
      return f(float{});
  }
}

// body(row) for row < rows: on the calling thread, or an OpenMP parallel for (static schedule).
template <class Body>
void over_rows(int64_t rows, int threads, Body&& body) {
  if (threads == 1) {
    for (int64_t r = 0; r < rows; ++r) body(r);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < rows; ++r) body(r);
}

}  // namespace posenc::bench::plain
