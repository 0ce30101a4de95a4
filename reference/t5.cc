// T5 relative-position buckets, evaluated as Hugging Face evaluates them (float32; see t5.h), and
// the bias looked up from the learned table.
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "reference/reference.h"

// The bucket emulates float32 arithmetic; excess precision (x87) would change the emulated ops.
static_assert(FLT_EVAL_METHOD == 0, "t5_bucket needs float operations evaluated in float");

namespace posenc::reference {

int64_t t5_bucket(int64_t relative_position, bool bidirectional, int64_t n_buckets,
                  int64_t max_distance) {
  // |INT64_MIN| has no int64; 2^63 − 1 falls in the same (last) bucket.
  const int64_t magnitude = relative_position == std::numeric_limits<int64_t>::min()
                                ? std::numeric_limits<int64_t>::max()
                                : std::abs(relative_position);
  int64_t n = n_buckets, bucket = 0, r = 0;
  if (bidirectional) {
    n /= 2;
    if (relative_position > 0) bucket = n;
    r = magnitude;
  } else if (relative_position < 0) {
    r = magnitude;
  }
  const int64_t exact = n / 2;
  if (r < exact) return bucket + r;

  // Only here, where r ≥ exact ≥ 1, is a logarithm taken: its argument is ≥ 1, never 0.
  // HF: exact + (log(float(r) / exact) / math.log(max_distance / exact) * (n − exact)).to(long),
  // each operation rounded to float32, the log correctly rounded.
  const float ratio = static_cast<float>(r) / static_cast<float>(exact);
  const auto log_ratio = static_cast<float>(std::log(static_cast<double>(ratio)));
  const auto log_span =
      static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(exact)));
  const float steps = log_ratio / log_span * static_cast<float>(n - exact);
  // HF's min(·, n − 1), decided before the integer conversion so that no value beyond int64 (nor
  // NaN, nor ∞) is ever converted: exact + ⌊steps⌋ < n − 1 ⟺ steps < n − exact − 1.
  if (!(static_cast<double>(steps) < static_cast<double>(n - exact - 1))) return bucket + n - 1;
  return bucket + exact + static_cast<int64_t>(steps);
}

void t5(const T5Call &call) {
  call.validate();
  const Tensor &q_pos = call.q_positions, &k_pos = call.k_positions;
  const Tensor &table = call.table, &bias = call.bias;
  const int64_t heads = table.shape[1];
  for (int64_t i = 0; i < q_pos.shape[0]; ++i) {
    const int64_t qp = load_index(q_pos, q_pos.offset(i));
    for (int64_t j = 0; j < k_pos.shape[0]; ++j) {
      const int64_t kp = load_index(k_pos, k_pos.offset(j));
      const int64_t b = t5_bucket(kp - qp, call.bidirectional, call.n_buckets, call.max_distance);
      for (int64_t h = 0; h < heads; ++h)
        store(bias, bias.offset(h, i, j), load(table, table.offset(b, h)));
    }
  }
}

}  // namespace posenc::reference
