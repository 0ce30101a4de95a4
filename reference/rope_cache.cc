// cos[p, i] = a·cos(p·ω_i), sin[p, i] = a·sin(p·ω_i) in fp64, rounded once to f32.
#include <cmath>

#include "reference/reference.h"

namespace posenc::reference {

void rope_cache(const RopeCacheCall& call) {
  call.validate();
  if (call.cos.shape[0] == 0) return;  // no row to write, and rotary_dim may be any size
  const RopeFrequencies r = frequencies(call.rotary_dim, call.base, call.scaling);
  const double a = r.attention_factor;
  for (int64_t p = 0; p < call.cos.shape[0]; ++p) {
    for (int64_t i = 0; i < call.rotary_dim / 2; ++i) {
      const double angle = static_cast<double>(p) * r.inv_freq[i];
      store(call.cos, call.cos.offset(p, i), a * std::cos(angle));
      store(call.sin, call.sin.offset(p, i), a * std::sin(angle));
    }
  }
}

}  // namespace posenc::reference
