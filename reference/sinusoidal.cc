// PE[p, 2i] = sin(p·ω_i), PE[p, 2i+1] = cos(p·ω_i), ω_i = base^(−2i/d); out = x + PE[pos].
#include <cmath>

#include "reference/reference.h"

namespace posenc::reference {

void sinusoidal(const SinusoidalCall& call) {
  call.validate();
  const Tensor& out = call.out;
  const int64_t tokens = out.shape[0], d = out.shape[1];
  for (int64_t t = 0; t < tokens; ++t) {
    const double p = static_cast<double>(call.position(t));
    for (int64_t i = 0; i < d / 2; ++i) {
      const double omega =
          std::pow(call.base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      const double angle = p * omega;
      const double x_sin = call.x ? load(*call.x, call.x->offset(t, 2 * i)) : 0.0;
      const double x_cos = call.x ? load(*call.x, call.x->offset(t, 2 * i + 1)) : 0.0;
      store(out, out.offset(t, 2 * i), x_sin + std::sin(angle));
      store(out, out.offset(t, 2 * i + 1), x_cos + std::cos(angle));
    }
  }
}

}  // namespace posenc::reference
