// ALiBi: slope_h from the head count, bias[h, i, j] = −slope_h·|q_pos[i] − k_pos[j]| in fp64.
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "reference/reference.h"

namespace posenc::reference {

double alibi_slope(int64_t h, int64_t n_heads, double max_bias) {
  // c = 2^⌊log₂ n⌋ heads get the geometric sequence; the rest interleave between its terms.
  const auto c = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(n_heads)));
  const double exponent =
      h < c ? -max_bias * static_cast<double>(h + 1) / static_cast<double>(c)
            : -(max_bias / 2) * static_cast<double>(2 * (h - c) + 1) / static_cast<double>(c);
  return std::exp2(exponent);
}

void alibi(const AlibiCall& call) {
  call.validate();
  const Tensor &q_pos = call.q_positions, &k_pos = call.k_positions, &bias = call.bias;
  const int64_t tq = q_pos.shape[0], tk = k_pos.shape[0];
  const double kMasked = -std::numeric_limits<double>::infinity();
  for (int64_t h = 0; h < call.n_heads; ++h) {
    const double slope = alibi_slope(h, call.n_heads, call.max_bias);
    if (call.slopes) store(*call.slopes, call.slopes->offset(h), slope);
    for (int64_t i = 0; i < tq; ++i) {
      const int64_t qp = load_index(q_pos, q_pos.offset(i));
      for (int64_t j = 0; j < tk; ++j) {
        const int64_t kp = load_index(k_pos, k_pos.offset(j));
        // −|Δ| is converted as an integer, so the diagonal is +0 (as ggml's mask makes it).
        const double value =
            call.causal && kp > qp ? kMasked : slope * static_cast<double>(-std::abs(qp - kp));
        store(bias, bias.offset(h, i, j), value);
      }
    }
  }
}

}  // namespace posenc::reference
