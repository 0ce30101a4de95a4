// sinusoidal's broken kernels for the self-test (selftest.h), beside its properties
// (properties/sinusoidal.cc). Each computes in fp64 and rounds once, like the reference, so that
// the bug is the only thing wrong with it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "posenc/error.h"
#include "properties/harness.h"
#include "properties/selftest.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

enum class SinusoidalBug {
  off_by_one,          // PE[p + 1]
  sin_sign_flipped,    // −sin
  omega_i_over_d,      // ω_i = base^(−i/d)
  no_range_reduction,  // sin/cos polynomials valid on [−π, π] applied to any angle
  f32_angles,          // θ = float(p)·float(ω)
  chunked_f32_angles,  // per thread chunk, θ advances by a running f32 sum
  positions_in_dtype,  // positions converted to out's dtype first (arange(n).to(dtype))
};

double poly_sin(double x) {  // Taylor to x⁹: fine near 0, unbounded far from it
  const double x2 = x * x;
  return x * (1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42 * (1 - x2 / 72))));
}
double poly_cos(double x) {
  const double x2 = x * x;
  return 1 - x2 / 2 * (1 - x2 / 12 * (1 - x2 / 30 * (1 - x2 / 56)));
}

void sinusoidal_with(SinusoidalBug bug, const SinusoidalCall& call) {
  call.validate();
  const Tensor& out = call.out;
  const int64_t tokens = out.shape[0], d = out.shape[1];
  const int64_t chunk =
      (tokens + resolve_threads(call.threads) - 1) / std::max(resolve_threads(call.threads), 1);
  for (int64_t i = 0; i < d / 2; ++i) {
    const double exponent = (bug == SinusoidalBug::omega_i_over_d ? 1.0 : 2.0) * i / d;
    const double omega = std::pow(call.base, -exponent);
    float running = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t p = call.position(t) + (bug == SinusoidalBug::off_by_one ? 1 : 0);
      // Exact in f32 (p ≤ 2²⁴); bf16 keeps 8 bits of it, f16 11 and nothing past 65504.
      const double position = bug == SinusoidalBug::positions_in_dtype
                                  ? rounded_to(out.dtype, static_cast<double>(p))
                                  : static_cast<double>(p);
      double angle = position * omega;
      if (bug == SinusoidalBug::f32_angles)
        angle = static_cast<float>(p) * static_cast<float>(omega);
      if (bug == SinusoidalBug::chunked_f32_angles) {
        // Each chunk starts exactly, then steps by the position difference in f32.
        running = t % chunk == 0 ? static_cast<float>(angle)
                                 : running + static_cast<float>(omega) *
                                                 static_cast<float>(p - call.position(t - 1));
        angle = running;
      }
      double s = std::sin(angle), c = std::cos(angle);
      if (bug == SinusoidalBug::no_range_reduction) s = poly_sin(angle), c = poly_cos(angle);
      if (bug == SinusoidalBug::sin_sign_flipped) s = -s;
      const double xs = call.x ? load(*call.x, call.x->offset(t, 2 * i)) : 0.0;
      const double xc = call.x ? load(*call.x, call.x->offset(t, 2 * i + 1)) : 0.0;
      store(out, out.offset(t, 2 * i), xs + s);
      store(out, out.offset(t, 2 * i + 1), xc + c);
    }
  }
}

}  // namespace

template <>
std::vector<Broken<SinusoidalCall>> broken_implementations<SinusoidalCall>() {
  using B = SinusoidalBug;
  auto make = [](const char* name, B bug, bool threaded = false) {
    return broken_kernel<SinusoidalCall>(name, bug, sinusoidal_with, 1, threaded);
  };
  std::vector<Broken<SinusoidalCall>> list = {
      {make("off_by_one", B::off_by_one), "reads position p + 1", "sinusoidal.pe0"},
      {make("sin_sign_flipped", B::sin_sign_flipped), "sin's sign flipped", "sinusoidal.rotation"},
      {make("omega_i_over_d", B::omega_i_over_d), "ω exponent i/d instead of 2i/d",
       "sinusoidal.offset_dot"},
      {make("no_range_reduction", B::no_range_reduction),
       "sin/cos polynomials without range reduction", "sinusoidal.range"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32: wrong at long positions",
       "sinusoidal.differential"},
      {make("chunked_f32_angles", B::chunked_f32_angles, true),
       "each thread's chunk advances its angle by a running f32 sum", "sinusoidal.threads"},
      {make("positions_in_dtype", B::positions_in_dtype),
       "converts positions to out's dtype before p·ω: wrong in bf16 and f16 only",
       "sinusoidal.differential"},
  };
  add_generic(list, "sinusoidal");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<SinusoidalCall>() {
  return {};
}

}  // namespace posenc::harness
