// alibi: bias[h, i, j] = slope_h·(−|q_pos[i] − k_pos[j]|), or −∞ where causal hides the key. Each
// element is evaluated as the reference evaluates it — the fp64 slope (the same exp2), the integer
// distance exactly in fp64, one fp64 product rounded once to f32 — so the output is bitwise the
// reference's. With consecutive key positions the rows are windows of one line per head (see
// bias_lines-inl.h); otherwise each row is computed directly, vectorized in fp64. Lines and rows
// are split across threads.
//
// A bf16 or f16 bias is the same fp64 value rounded once to its dtype: to f32 rounding to odd,
// then to nearest even (math-inl.h's lowp), so it is bitwise the reference's too.
#ifndef POSENC_OPTIMIZED_ALIBI_SHARED
#define POSENC_OPTIMIZED_ALIBI_SHARED
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/thread_pool.h"

namespace posenc::optimized::alibi_detail {

// The slope of head h, by the reference's formula in fp64 (see alibi.h).
inline double slope(int64_t h, int64_t n_heads, double max_bias) {
  const auto c = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(n_heads)));
  const double exponent =
      h < c ? -max_bias * static_cast<double>(h + 1) / static_cast<double>(c)
            : -(max_bias / 2) * static_cast<double>(2 * (h - c) + 1) / static_cast<double>(c);
  return std::exp2(exponent);
}

// The fp64 value for key − query distance x = k_pos − q_pos, as the vector code computes it.
inline double value(double slope, double x, bool causal) {
  if (causal && x > 0) return -std::numeric_limits<double>::infinity();
  // The reference's −|x| is an integer, so the diagonal is +0; elsewhere a zero (a slope that
  // underflowed) keeps the product's sign, −0.
  return x == 0 ? 0.0 : slope * -std::fabs(x);
}

}  // namespace posenc::optimized::alibi_detail
#endif  // POSENC_OPTIMIZED_ALIBI_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/alibi.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include "optimized/bias_lines-inl.h"
#include "optimized/math-inl.h"
// clang-format on

#ifndef POSENC_OPTIMIZED_ALIBI_PLAN
#define POSENC_OPTIMIZED_ALIBI_PLAN
namespace posenc::optimized::alibi_detail {

struct Plan {
  const AlibiCall* call = nullptr;
  std::vector<double> slopes;
  std::vector<bool> slope_is_f32;  // the fp64 slope is exactly an f32: see AlibiRowExactF32
  std::vector<int64_t> q_pos;
  BiasLines lines;
  bool value_lines = false;     // rows are windows of one line of values per head
  void* line_values = nullptr;  // heads × lines.length of the bias's dtype, when value_lines
  double* k_pos = nullptr;      // keys not consecutive: their positions, exact in fp64
  bool stream = false;

  explicit Plan(const AlibiCall& c)
      : call(&c), q_pos(read_positions(c.q_positions)), lines(q_pos, c.k_positions, c.bias) {
    for (int64_t h = 0; h < c.n_heads; ++h) {
      slopes.push_back(slope(h, c.n_heads, c.max_bias));
      slope_is_f32.push_back(static_cast<double>(static_cast<float>(slopes[h])) == slopes[h]);
    }
    value_lines = lines.worth_values();
    if (value_lines) {
      const int64_t n = c.n_heads * lines.length;
      line_values = c.bias.dtype == DType::f32 ? static_cast<void*>(reusable<float>(n))
                                               : static_cast<void*>(reusable<uint16_t>(n));
    } else if (!lines.windows) {
      const Tensor& k = c.k_positions;
      k_pos = reusable<double>(k.shape[0]);
      if (k.dtype == DType::i64) {
        convert(k.as<int64_t>(), k.strides[0], k.shape[0], k_pos);
      } else {
        convert(k.as<int32_t>(), k.strides[0], k.shape[0], k_pos);
      }
    }
    stream = stream_bias(c.bias);
  }

  template <class Index>
  static void convert(const Index* p, int64_t stride, int64_t n, double* out) {
    if (stride == 1) {  // the common case, vectorized by the compiler
      for (int64_t j = 0; j < n; ++j) out[j] = static_cast<double>(p[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) out[j] = static_cast<double>(p[j * stride]);
    }
  }

  static std::vector<int64_t> read_positions(const Tensor& t) {
    std::vector<int64_t> p(t.shape[0]);
    for (int64_t i = 0; i < t.shape[0]; ++i) p[i] = load_index(t, t.offset(i));
    return p;
  }
};

}  // namespace posenc::optimized::alibi_detail
#endif  // POSENC_OPTIMIZED_ALIBI_PLAN

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace alibi_detail;

// out[j·stride] = value(slope, distance(j), causal) rounded once to T, for j < n; distance(d, j)
// gives the distances of keys j, j + 1, … as a vector of doubles.
template <class T, class Distance>
HWY_INLINE void AlibiRow(double slope, bool causal, int64_t n, lowp::Lane<T>* out, int64_t stride,
                         bool stream, const Distance& distance) {
  const hn::CappedTag<double, 1> one;
  const auto scalar_at = [&](int64_t j) {
    const double v = value(slope, hn::GetLane(distance(one, j)), causal);
    if constexpr (sizeof(T) == 4) {
      return static_cast<float>(v);
    } else {
      return lowp::RoundF64<T>(v);
    }
  };
  if (stride != 1) {
    for (int64_t j = 0; j < n; ++j) out[j * stride] = scalar_at(j);
    return;
  }
#if HWY_TARGET == HWY_SCALAR
  const auto vector_at = [&](auto d, int64_t j) { return hn::Set(d, scalar_at(j)); };
#else
  const hn::Repartition<double, hn::ScalableTag<float>> dd;
  const auto vslope = hn::Set(dd, slope), zero = hn::Zero(dd);
  const auto neg_inf = hn::Set(dd, -std::numeric_limits<double>::infinity());
  // Half a float vector's elements in fp64, demoted to f32 (to odd for a 16-bit T).
  const auto half = [&](int64_t at) {
    const auto x = distance(dd, at);
    // As value(): +0 on the diagonal, else slope·(−|x|).
    auto v = hn::IfThenZeroElse(hn::Eq(x, zero), hn::Mul(vslope, hn::Neg(hn::Abs(x))));
    if (causal) v = hn::IfThenElse(hn::Gt(x, zero), neg_inf, v);
    // DemoteToF32: EMU128's DemoteTo would clamp the causal −∞ to −FLT_MAX.
    const hn::Rebind<float, decltype(dd)> dh;
    if constexpr (sizeof(T) == 4) {
      return DemoteToF32(dh, v);
    } else {
      return lowp::DemoteToF32RoundToOdd(dh, v);
    }
  };
  const auto f32_at = [&](auto df, int64_t j) {
    const int64_t H = static_cast<int64_t>(hn::Lanes(dd));
    return hn::Combine(df, half(j + H), half(j));
  };
  const auto vector_at = [&](auto d, int64_t j) { return lowp::LanesAt<T>(d, j, f32_at); };
#endif
  WriteRow(out, n, stream, vector_at, scalar_at);
}

// AlibiRow for an f32 bias whose slope is exactly an f32 (a power of two: every head when
// n_heads ≤ 8) and whose distances are x0, x0 + 1, …: those are integers of magnitude ≤ 2^24,
// exact in f32, so the f32 product slope·(−|x|) is the exact product rounded once, as the fp64
// one converted to f32 is (its 48-bit product is exact in fp64): the same bits from f32 lanes,
// twice as many per vector.
HWY_INLINE void AlibiRowExactF32(float slope, bool causal, int64_t n, float* out, bool stream,
                                 double x0) {
  const auto scalar_at = [&](int64_t j) {
    return static_cast<float>(value(slope, x0 + static_cast<double>(j), causal));
  };
  const hn::ScalableTag<float> df;
  const auto vslope = hn::Set(df, slope), zero = hn::Zero(df);
  const auto neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  const auto vector_at = [&](auto d, int64_t j) {
    const auto x = hn::Iota(d, static_cast<float>(x0 + static_cast<double>(j)));
    auto v = hn::IfThenZeroElse(hn::Eq(x, zero), hn::Mul(vslope, hn::Neg(hn::Abs(x))));
    return causal ? hn::IfThenElse(hn::Gt(x, zero), neg_inf, v) : v;
  };
  WriteRow(out, n, stream, vector_at, scalar_at);
}

// Items [begin, end): the heads' lines when `lines`, else the bias rows (row = h·tq + i), as
// windows of the lines or computed directly.
template <class T>
void AlibiPartOf(const Plan& plan, bool lines, int64_t begin, int64_t end) {
  using L = lowp::Lane<T>;
  const AlibiCall& call = *plan.call;
  const Tensor& bias = call.bias;
  L* const line_values = static_cast<L*>(plan.line_values);
  if (lines) {  // line_h[x] for distances first, first + 1, …: an iota
    const double first = static_cast<double>(plan.lines.first);
    for (int64_t h = begin; h < end; ++h) {
      if constexpr (sizeof(T) == 4) {
        if (plan.slope_is_f32[h]) {
          AlibiRowExactF32(static_cast<float>(plan.slopes[h]), call.causal, plan.lines.length,
                           line_values + h * plan.lines.length, /*stream=*/false, first);
          continue;
        }
      }
      AlibiRow<T>(
          plan.slopes[h], call.causal, plan.lines.length, line_values + h * plan.lines.length, 1,
          /*stream=*/false,
          [first](auto d, int64_t at) { return hn::Iota(d, first + static_cast<double>(at)); });
    }
    return;
  }
  if (plan.value_lines) {
    CopyWindows(plan.lines, static_cast<const L*>(line_values), bias, begin, end, plan.stream);
    return;
  }
  const int64_t tq = bias.shape[1], tk = bias.shape[2];
  for (int64_t row = begin; row < end; ++row) {
    const int64_t h = row / tq, i = row % tq;
    L* out = bias.as<L>() + bias.offset(h, i, 0);
    // x = k_pos − q_pos, exact in fp64: positions lie in [0, 2^24].
    if (plan.lines.windows) {  // consecutive keys: x = first + start + j
      const double x0 = static_cast<double>(plan.lines.first + plan.lines.start[i]);
      if constexpr (sizeof(T) == 4) {
        if (plan.slope_is_f32[h]) {
          AlibiRowExactF32(static_cast<float>(plan.slopes[h]), call.causal, tk, out, plan.stream,
                           x0);
          continue;
        }
      }
      AlibiRow<T>(plan.slopes[h], call.causal, tk, out, 1, plan.stream,
                  [x0](auto d, int64_t at) { return hn::Iota(d, x0 + static_cast<double>(at)); });
    } else {
      const double qp = static_cast<double>(plan.q_pos[i]);
      AlibiRow<T>(plan.slopes[h], call.causal, tk, out, bias.strides[2], plan.stream,
                  [&](auto d, int64_t at) {
                    return hn::Sub(hn::LoadU(d, plan.k_pos + at), hn::Set(d, qp));
                  });
    }
  }
  if (plan.stream) hwy::FlushStream();
}

void AlibiPart(const Plan& plan, bool lines, int64_t begin, int64_t end) {
  switch (plan.call->bias.dtype) {
    case DType::bf16:
      return AlibiPartOf<hwy::bfloat16_t>(plan, lines, begin, end);
    case DType::f16:
      return AlibiPartOf<hwy::float16_t>(plan, lines, begin, end);
    default:
      return AlibiPartOf<float>(plan, lines, begin, end);
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using AlibiPartFn = decltype(HWY_STATIC_DISPATCH(AlibiPart));

namespace {

void run_alibi(const AlibiCall& call, AlibiPartFn* part) {
  call.validate();
  const int64_t heads = call.n_heads, tq = call.bias.shape[1], tk = call.bias.shape[2];
  // About a quarter nanosecond per element written.
  const int parts = plan_parts(call.threads, heads * tq, 0.25 * static_cast<double>(tk));
  const alibi_detail::Plan plan(call);
  if (call.slopes) {
    for (int64_t h = 0; h < heads; ++h) store(*call.slopes, call.slopes->offset(h), plan.slopes[h]);
  }
  if (call.bias.numel() == 0) return;  // an empty view may have no data to offset from
  if (plan.value_lines) {
    const double per_line = 0.5 * static_cast<double>(plan.lines.length);
    parallel_for(heads, plan_parts(call.threads, heads, per_line),
                 [&](Range r) { part(plan, true, r.begin, r.end); });
  }
  parallel_for(heads * tq, parts, [&](Range r) { part(plan, false, r.begin, r.end); });
}

}  // namespace

// ALiBi slopes and bias, each element evaluated in fp64 as the reference does: bound 0 (bitwise).
std::vector<Impl<AlibiCall>> alibi() {
  static const TargetTable<AlibiPartFn> table = POSENC_TARGET_TABLE(AlibiPart);
  const uint64_t variants = variant::f32 | variant::bf16 | variant::f16 | variant::strided |
                            variant::alibi_causal | variant::alibi_slopes;
  return target_impls<AlibiCall>("alibi", variants, /*bound=*/0, /*threaded=*/true, table,
                                 run_alibi);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
