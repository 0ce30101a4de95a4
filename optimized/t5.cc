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
// With consecutive key positions, a row's relative positions are consecutive too: the row is a
// window of one line of buckets, which is a few runs of equal buckets (one per exact distance, one
// per logarithmic bucket), so a row is a few fills. Keys in any order are bucketed one by one and
// looked up from the head's column of the table.
//
// Elements are copied as bits, 32 (f32) or 16 (bf16, f16: table and bias share the dtype) wide.
#ifndef POSENC_OPTIMIZED_T5_SHARED
#define POSENC_OPTIMIZED_T5_SHARED
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "optimized/costs.h"
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

  // The smallest rp' > rp whose bucket may differ from rp's.
  int64_t next_change(int64_t rp) const {
    if (rp >= 0 && !bidirectional_) return std::numeric_limits<int64_t>::max();  // all bucket 0
    if (rp < 0) {  // r = −rp falls as rp rises
      const int64_t r = -rp;
      if (r <= exact_) return rp + 1;
      // The bucket holds while r stays ≥ the largest threshold ≤ r (or ≥ exact if none).
      const auto t = std::upper_bound(thresholds_.begin(), thresholds_.end(), r);
      return -(t == thresholds_.begin() ? exact_ : *(t - 1)) + 1;
    }
    if (rp < exact_) return rp + 1;  // bidirectional, r = rp rises
    const auto t = std::upper_bound(thresholds_.begin(), thresholds_.end(), rp);
    return t == thresholds_.end() ? std::numeric_limits<int64_t>::max() : *t;
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

// A run of equal buckets along a line: x in [begin, next run's begin).
struct Run {
  int64_t begin;
  int32_t bucket;
};

template <class Index>
void read_positions(const Index* p, int64_t stride, int64_t n, int64_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = p[i * stride];
}
inline std::vector<int64_t> read_positions(const Tensor& t) {
  std::vector<int64_t> p(t.shape[0]);
  if (t.dtype == DType::i64) {
    read_positions(t.as<int64_t>(), t.strides[0], t.shape[0], p.data());
  } else {
    read_positions(t.as<int32_t>(), t.strides[0], t.shape[0], p.data());
  }
  return p;
}

}  // namespace posenc::optimized::t5_detail
#endif  // POSENC_OPTIMIZED_T5_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/t5.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include "optimized/bias_lines-inl.h"
#include "optimized/math-inl.h"
// clang-format on

#ifndef POSENC_OPTIMIZED_T5_PLAN
#define POSENC_OPTIMIZED_T5_PLAN
namespace posenc::optimized::t5_detail {

struct Plan {
  const T5Call* call = nullptr;
  int64_t heads = 0, n_buckets = 0;
  std::vector<int64_t> q_pos;
  BiasLines lines;
  std::vector<int64_t> k_pos;  // when the keys are not consecutive
  // The table transposed, as bits (a 16-bit dtype's zero-extended): columns[h·n_buckets + b] =
  // table[b, h].
  std::vector<uint32_t> columns;
  std::vector<Run> runs;  // consecutive keys: the line of buckets of rp = lines.first + x
  Buckets buckets;
  bool stream = false;

  explicit Plan(const T5Call& c)
      : call(&c),
        heads(c.table.shape[1]),
        n_buckets(c.n_buckets),
        q_pos(read_positions(c.q_positions)),
        lines(q_pos, c.k_positions, c.bias),
        k_pos(lines.windows ? std::vector<int64_t>() : read_positions(c.k_positions)),
        buckets(c, largest_distance()),
        stream(stream_bias(c.bias)) {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t b = 0; b < n_buckets; ++b) {
        const int64_t at = c.table.offset(b, h);
        columns.push_back(c.table.dtype == DType::f32 ? c.table.as<uint32_t>()[at]
                                                      : c.table.as<uint16_t>()[at]);
      }
    if (!lines.windows) return;
    for (int64_t x = 0; x < lines.length;) {
      const int64_t rp = lines.first + x;
      runs.push_back({x, static_cast<int32_t>(buckets(rp))});
      const int64_t next = buckets.next_change(rp);
      x = next - rp > lines.length - x ? lines.length : x + (next - rp);
    }
  }

  // The largest |k_pos − q_pos| of the call.
  int64_t largest_distance() const {
    if (lines.windows) return std::max(-lines.first, lines.first + lines.length - 1);
    if (q_pos.empty() || k_pos.empty()) return 0;
    const auto [q_lo, q_hi] = std::minmax_element(q_pos.begin(), q_pos.end());
    const auto [k_lo, k_hi] = std::minmax_element(k_pos.begin(), k_pos.end());
    return std::max(*k_hi - *q_lo, *q_hi - *k_lo);
  }
};

}  // namespace posenc::optimized::t5_detail
#endif  // POSENC_OPTIMIZED_T5_PLAN

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace t5_detail;

// Rows [begin, end) (row = h·tq + i) when the keys are consecutive: the runs of the line under
// the row's window. Whole aligned vectors inside a run are written in a tight loop of one value
// (at the store rate); a vector across runs takes its lanes one by one, so it is still one aligned
// store (Stream and Store need the alignment; element stores at run boundaries measured slower
// on large streamed outputs). L: the bias's element bits, uint32_t or uint16_t.
template <class L>
void T5WindowRows(const Plan& plan, int64_t begin, int64_t end) {
  const Tensor& bias = plan.call->bias;
  const int64_t tq = bias.shape[1], tk = bias.shape[2];
  const hn::ScalableTag<L> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const size_t align = static_cast<size_t>(N) * sizeof(L);
  const auto store = [&](hn::VFromD<decltype(d)> v, L* at) {
    plan.stream ? hn::Stream(v, d, at) : hn::Store(v, d, at);
  };
  for (int64_t row = begin; row < end; ++row) {
    const int64_t h = row / tq, i = row % tq, start = plan.lines.start[i];
    const uint32_t* column = &plan.columns[h * plan.n_buckets];
    L* dst = bias.as<L>() + bias.offset(h, i, 0);
    // The run of element j, for j rising: the last run beginning at or before line position
    // start + j; run_end (in row coordinates) is where it stops.
    auto run = std::upper_bound(plan.runs.begin(), plan.runs.end(), start,
                                [](int64_t x, const Run& r) { return x < r.begin; }) -
               1;
    const auto end_of = [&](auto r) {
      return (r + 1 == plan.runs.end() ? plan.lines.length : (r + 1)->begin) - start;
    };
    int64_t run_end = end_of(run);
    const auto value_at = [&](int64_t j) {
      while (j >= run_end) run_end = end_of(++run);
      return static_cast<L>(column[run->bucket]);
    };
    int64_t j = 0;
    for (; j < tk && reinterpret_cast<uintptr_t>(dst + j) % align != 0; ++j) dst[j] = value_at(j);
    while (j + N <= tk) {
      const L value = value_at(j);
      if (j + N <= run_end) {  // whole vectors of this run
        const auto v = hn::Set(d, value);
        const int64_t stop = std::min(run_end, tk) - N;
        for (; j <= stop; j += N) store(v, dst + j);
        continue;
      }
      HWY_ALIGN L lanes[hn::MaxLanes(decltype(d)())];
      for (int64_t l = 0; l < N; ++l) lanes[l] = value_at(j + l);
      store(hn::Load(d, lanes), dst + j);
      j += N;
    }
    for (; j < tk; ++j) dst[j] = value_at(j);
  }
  if (plan.stream) hwy::FlushStream();
}

// Query rows [begin, end) when the keys are in any order: each query's buckets once, then the
// heads' rows looked up from the table's columns (32-bit gathers; 16-bit lanes take two).
template <class L>
void T5QueryRows(const Plan& plan, int64_t begin, int64_t end) {
  const Tensor& bias = plan.call->bias;
  const int64_t tk = bias.shape[2];
  int32_t* bucket = reusable<int32_t>(tk);
  for (int64_t i = begin; i < end; ++i) {
    for (int64_t j = 0; j < tk; ++j)
      bucket[j] = static_cast<int32_t>(plan.buckets(plan.k_pos[j] - plan.q_pos[i]));
    for (int64_t h = 0; h < plan.heads; ++h) {
      const uint32_t* column = &plan.columns[h * plan.n_buckets];
      L* out = bias.as<L>() + bias.offset(h, i, 0);
      const auto value_at = [&](int64_t j) { return static_cast<L>(column[bucket[j]]); };
      if (bias.strides[2] != 1) {
        for (int64_t j = 0; j < tk; ++j) out[j * bias.strides[2]] = value_at(j);
        continue;
      }
      const auto gather = [&](auto du32, int64_t j) {
        const hn::RebindToSigned<decltype(du32)> di;
        return hn::GatherIndex(du32, column, hn::LoadU(di, bucket + j));
      };
      WriteRow(
          out, tk, plan.stream,
          [&](auto d, int64_t j) {
            if constexpr (sizeof(L) == 4) {
              return gather(d, j);
            } else {
#if HWY_TARGET == HWY_SCALAR  // one lane, no Combine
              return hn::Set(d, value_at(j));
#else
              const hn::Half<decltype(d)> dh;
              const hn::Rebind<uint32_t, decltype(dh)> du32;
              const int64_t H = static_cast<int64_t>(hn::Lanes(du32));
              return hn::Combine(d, lowp::Low16(du32, gather(du32, j + H)),
                                 lowp::Low16(du32, gather(du32, j)));
#endif
            }
          },
          value_at);
    }
  }
  if (plan.stream) hwy::FlushStream();
}

// Items [begin, end): rows (h·tq + i) with consecutive keys, else query rows.
template <class L>
void T5PartOf(const Plan& plan, int64_t begin, int64_t end) {
  if (plan.lines.windows) {
    T5WindowRows<L>(plan, begin, end);
  } else {
    T5QueryRows<L>(plan, begin, end);
  }
}

void T5Part(const Plan& plan, int64_t begin, int64_t end) {
  if (plan.call->bias.dtype == DType::f32) {
    T5PartOf<uint32_t>(plan, begin, end);
  } else {
    T5PartOf<uint16_t>(plan, begin, end);
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using T5PartFn = decltype(HWY_STATIC_DISPATCH(T5Part));

namespace {

void run_t5(const T5Call& call, T5PartFn* part) {
  call.validate();
  if (call.bias.numel() == 0) return;  // an empty view may have no data to offset from
  const int64_t heads = call.table.shape[1], tq = call.bias.shape[1], tk = call.bias.shape[2];
  const double per_row =
      kT5NanosPerByte * static_cast<double>(dtype_size(call.bias.dtype)) * static_cast<double>(tk);
  const int row_parts = plan_parts(call.threads, heads * tq, per_row);
  const int query_parts = plan_parts(call.threads, tq, per_row * static_cast<double>(heads));
  const t5_detail::Plan plan(call);
  const int64_t items = plan.lines.windows ? heads * tq : tq;
  parallel_for(items, plan.lines.windows ? row_parts : query_parts,
               [&](Range r) { part(plan, r.begin, r.end); });
}

}  // namespace

// T5 relative-position bias: the reference's float32 buckets, looked up: bound 0 (bitwise).
std::vector<Impl<T5Call>> t5() {
  static const TargetTable<T5PartFn> table = POSENC_TARGET_TABLE(T5Part);
  const uint64_t variants = variant::f32 | variant::bf16 | variant::f16 | variant::strided |
                            variant::t5_bidirectional | variant::t5_causal;
  return target_impls<T5Call>("t5", variants, /*bound=*/0, /*threaded=*/true, table, run_t5);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
