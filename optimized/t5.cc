// t5: bias[h, i, j] = table[bucket(k_pos[j] − q_pos[i]), h], bitwise the reference's.
//
// The bucket of a distance r ≥ e is Hugging Face's float32 expression (see t5.h), and it is
// non-decreasing in r: float(r), the divisions and products by positive constants, the floor and
// the final roundings are all monotone, and fp64 log, accurate to about an fp64 ulp, cannot
// reverse the order of two distinct floats (their logs differ by more than 2^-25 relative). So
// bucket(r) = e + #{thresholds ≤ r}, where threshold b is the smallest r with bucket(r) ≥ b, found
// once per call by binary search over the expression itself, for the distances this call can
// meet. No logarithm per element, none of 0, and no conversion of a non-finite value.
//
// With consecutive key positions the buckets of a row are a window of one line of buckets, and
// with enough rows the values are one line per head (bias_lines-inl.h): rows become copies.
// Otherwise each row looks its values up from the head's column of the table.
#ifndef POSENC_OPTIMIZED_T5_SHARED
#define POSENC_OPTIMIZED_T5_SHARED
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/thread_pool.h"

static_assert(FLT_EVAL_METHOD == 0, "the bucket expression needs float operations in float");

namespace posenc::optimized::t5_detail {

// Buckets of relative positions rp = k_pos − q_pos with |rp| ≤ max_distance_seen.
class Buckets {
 public:
  Buckets(const T5Call& call, int64_t max_distance_seen)
      : bidirectional_(call.bidirectional),
        n_(call.bidirectional ? call.n_buckets / 2 : call.n_buckets),
        exact_(n_ / 2),
        max_distance_(call.max_distance) {
    // Threshold of each logarithmic bucket exact + 1 … n − 1 that some r ≤ max_distance_seen
    // reaches; each search starts at the previous threshold.
    int64_t lo = exact_;
    for (int64_t b = exact_ + 1; b < n_; ++b) {
      if (max_distance_seen < lo || log_bucket(max_distance_seen) < b) break;
      int64_t hi = max_distance_seen;  // log_bucket(hi) ≥ b; find the smallest such r
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (log_bucket(mid) >= b) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      thresholds_.push_back(lo);
    }
  }

  int64_t operator()(int64_t rp) const {
    int64_t bucket = 0, r = 0;
    if (bidirectional_) {
      if (rp > 0) bucket = n_;
      r = rp < 0 ? -rp : rp;
    } else if (rp < 0) {
      r = -rp;
    }
    if (r < exact_) return bucket + r;
    return bucket + exact_ +
           (std::upper_bound(thresholds_.begin(), thresholds_.end(), r) - thresholds_.begin());
  }

 private:
  // The reference's bucket for r ≥ exact within one direction, the same float32 operations.
  int64_t log_bucket(int64_t r) const {
    const float ratio = static_cast<float>(r) / static_cast<float>(exact_);
    const auto log_ratio = static_cast<float>(std::log(static_cast<double>(ratio)));
    const auto log_span = static_cast<float>(
        std::log(static_cast<double>(max_distance_) / static_cast<double>(exact_)));
    const float steps = log_ratio / log_span * static_cast<float>(n_ - exact_);
    if (!(static_cast<double>(steps) < static_cast<double>(n_ - exact_ - 1))) return n_ - 1;
    return exact_ + static_cast<int64_t>(steps);
  }

  bool bidirectional_;
  int64_t n_, exact_, max_distance_;
  std::vector<int64_t> thresholds_;
};

}  // namespace posenc::optimized::t5_detail
#endif  // POSENC_OPTIMIZED_T5_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/t5.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include "optimized/bias_lines-inl.h"
// clang-format on

#ifndef POSENC_OPTIMIZED_T5_PLAN
#define POSENC_OPTIMIZED_T5_PLAN
namespace posenc::optimized::t5_detail {

// What the items of a parallel_for are: the heads' value lines; the bias rows (row = h·tq + i),
// as windows of the value lines or looked up through a window of the bucket line; or, keys in any
// order, the query rows, each bucketed once for all heads.
enum class Phase { value_lines, rows, query_rows };

struct Plan {
  const T5Call* call = nullptr;
  int64_t heads = 0, n_buckets = 0;
  std::vector<int64_t> q_pos, k_pos;
  std::vector<float> columns;  // the table transposed: columns[h·n_buckets + b] = table[b, h]
  BiasLines lines;
  Buckets buckets;
  std::vector<int32_t> line_buckets;  // consecutive keys: bucket(lines.first + x)
  bool value_lines = false;           // rows are windows of one line of values per head
  float* line_values = nullptr;       // heads × lines.length, when value_lines
  bool stream = false;

  explicit Plan(const T5Call& c)
      : call(&c),
        heads(c.table.shape[1]),
        n_buckets(c.n_buckets),
        q_pos(read(c.q_positions)),
        k_pos(read(c.k_positions)),
        lines(q_pos, c.k_positions, c.bias),
        buckets(c, largest_distance(q_pos, k_pos)),
        stream(stream_bias(c.bias)) {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t b = 0; b < n_buckets; ++b)
        columns.push_back(c.table.as<float>()[c.table.offset(b, h)]);
    if (lines.windows) {
      for (int64_t x = 0; x < lines.length; ++x)
        line_buckets.push_back(static_cast<int32_t>(buckets(lines.first + x)));
    }
    value_lines = lines.worth_values();
    if (value_lines) line_values = reusable<float>(heads * lines.length);
  }

  static std::vector<int64_t> read(const Tensor& t) {
    std::vector<int64_t> p(t.shape[0]);
    for (int64_t i = 0; i < t.shape[0]; ++i) p[i] = load_index(t, t.offset(i));
    return p;
  }

  static int64_t largest_distance(const std::vector<int64_t>& q, const std::vector<int64_t>& k) {
    if (q.empty() || k.empty()) return 0;
    const auto [q_lo, q_hi] = std::minmax_element(q.begin(), q.end());
    const auto [k_lo, k_hi] = std::minmax_element(k.begin(), k.end());
    return std::max(*k_hi - *q_lo, *q_hi - *k_lo);
  }
};

}  // namespace posenc::optimized::t5_detail
#endif  // POSENC_OPTIMIZED_T5_PLAN

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace t5_detail;

// out[j·stride] = column[bucket[j]] for j < n.
HWY_INLINE void LookUpRow(const float* column, const int32_t* bucket, int64_t n, float* out,
                          int64_t stride, bool stream) {
  if (stride != 1) {
    for (int64_t j = 0; j < n; ++j) out[j * stride] = column[bucket[j]];
    return;
  }
  WriteRow(
      out, n, stream,
      [&](auto d, int64_t j) {
        return hn::GatherIndex(d, column, hn::LoadU(hn::RebindToSigned<decltype(d)>(), bucket + j));
      },
      [&](int64_t j) { return column[bucket[j]]; });
}

void T5Part(const Plan& plan, Phase phase, int64_t begin, int64_t end) {
  const Tensor& bias = plan.call->bias;
  const int64_t tq = bias.shape[1], tk = bias.shape[2], n_buckets = plan.n_buckets;
  switch (phase) {
    case Phase::value_lines:
      for (int64_t h = begin; h < end; ++h) {
        LookUpRow(&plan.columns[h * n_buckets], plan.line_buckets.data(), plan.lines.length,
                  plan.line_values + h * plan.lines.length, 1, /*stream=*/false);
      }
      return;
    case Phase::rows:
      if (plan.value_lines) {
        CopyWindows(plan.lines, plan.line_values, bias, begin, end, plan.stream);
        return;
      }
      for (int64_t row = begin; row < end; ++row) {
        const int64_t h = row / tq, i = row % tq;
        LookUpRow(&plan.columns[h * n_buckets], plan.line_buckets.data() + plan.lines.start[i], tk,
                  bias.as<float>() + bias.offset(h, i, 0), 1, plan.stream);
      }
      break;
    case Phase::query_rows: {
      int32_t* bucket = reusable<int32_t>(tk);
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t j = 0; j < tk; ++j)
          bucket[j] = static_cast<int32_t>(plan.buckets(plan.k_pos[j] - plan.q_pos[i]));
        for (int64_t h = 0; h < plan.heads; ++h) {
          LookUpRow(&plan.columns[h * n_buckets], bucket, tk,
                    bias.as<float>() + bias.offset(h, i, 0), bias.strides[2], plan.stream);
        }
      }
      break;
    }
  }
  if (plan.stream) hwy::FlushStream();
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using T5PartFn = decltype(HWY_STATIC_DISPATCH(T5Part));

namespace {

void run_t5(const T5Call& call, T5PartFn* part) {
  using t5_detail::Phase;
  call.validate();
  const int64_t heads = call.table.shape[1], tq = call.bias.shape[1], tk = call.bias.shape[2];
  // About a quarter nanosecond per element written.
  const double per_row = 0.25 * static_cast<double>(tk);
  const int parts = plan_parts(call.threads, heads * tq, per_row);
  const t5_detail::Plan plan(call);
  if (plan.value_lines) {
    const double per_line = 0.25 * static_cast<double>(plan.lines.length);
    parallel_for(heads, plan_parts(call.threads, heads, per_line),
                 [&](Range r) { part(plan, Phase::value_lines, r.begin, r.end); });
  }
  if (plan.lines.windows) {
    parallel_for(heads * tq, parts, [&](Range r) { part(plan, Phase::rows, r.begin, r.end); });
  } else {
    parallel_for(tq, plan_parts(call.threads, tq, per_row * static_cast<double>(heads)),
                 [&](Range r) { part(plan, Phase::query_rows, r.begin, r.end); });
  }
}

}  // namespace

std::vector<Impl<T5Call>> t5() {
  static const TargetTable<T5PartFn> table = POSENC_TARGET_TABLE(T5Part);
  const uint64_t variants =
      variant::f32 | variant::strided | variant::t5_bidirectional | variant::t5_causal;
  return target_impls<T5Call>("t5", variants, /*bound=*/0, /*threaded=*/true, table, run_t5);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
