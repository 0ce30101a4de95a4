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

#include "optimized/costs.h"
#include "optimized/optimized.h"
#include "optimized/thread_pool.h"

namespace posenc::optimized::alibi_detail {

// Direct rows are split in blocks of this many bytes of keys, so that a decode call's few rows (one
// query, one group of heads) still give both threads work, and so that the block of a group's
// first row, which its other heads read back to scale, stays in L1 while they are written (32 KiB
// blocks measured 1.3–1.4× slower in f32 on a 64-head decode row). Fixed per dtype, so items never
// depend on threads.
inline constexpr int64_t kKeyBlockBytes = 8192;

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
  std::vector<bool> slope_is_f32;   // the fp64 slope is exactly an f32: see AlibiRowExactF32
  std::vector<bool> slope_is_pow2;  // a power of two: its f32 products are exact (any dtype)
  // Direct rows: heads in groups whose slopes differ by exact powers of two (max_bias 8 and 64
  // heads: 8 groups of 8); a group's first head is computed, the others are its row scaled by
  // 2^-shift[h], exact while every value stays in the dtype's normal range (see Normal16Fits).
  std::vector<int64_t> group_heads, group_begin;
  std::vector<int> shift;
  int64_t key_block = 0;            // keys per block of a direct row: see kKeyBlockBytes
  int64_t key_blocks = 1;           // blocks per direct row
  bool normal_range_known = false;  // keys consecutive: max_distance bounds every |x|
  double max_distance = 0;
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
      int e = 0;
      slope_is_pow2.push_back(std::frexp(slopes[h], &e) == 0.5);
    }
    value_lines = lines.worth_values();
    if (lines.windows) {
      normal_range_known = true;
      max_distance = static_cast<double>(
          std::max(std::abs(lines.first), std::abs(lines.first + lines.length - 1)));
    }
    group(c);
    key_block = kKeyBlockBytes / static_cast<int64_t>(dtype_size(c.bias.dtype));
    if (!value_lines)
      key_blocks = std::max<int64_t>(1, (c.bias.shape[2] + key_block - 1) / key_block);
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

  // Whether every nonzero |slope·x| (1 ≤ |x| ≤ max_distance) is a normal of the bias's dtype with
  // a factor of two to spare, so that rounding commutes with scaling by powers of two.
  bool fits_normal(double slope) const {
    const bool f16 = call->bias.dtype == DType::f16;
    const double min_normal = f16 ? 0x1p-14 : 0x1p-126, max_finite = f16 ? 65504 : 0x1p127;
    return normal_range_known && slope >= 2 * min_normal && slope * max_distance <= max_finite / 2;
  }

  // Fills group_heads, group_begin and shift: heads join the group of the largest slope with the
  // same significand when both slopes fit the normal range; order depends only on the call.
  void group(const AlibiCall& c) {
    const int64_t n = c.n_heads;
    shift.assign(static_cast<size_t>(n), 0);
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t h = 0; h < n; ++h) order[h] = h;
    const bool can_scale = !value_lines && normal_range_known;
    if (can_scale) {  // by significand, then largest slope first, then head
      const auto significand = [&](int64_t h) {
        int e = 0;
        return std::frexp(slopes[h], &e);
      };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double sa = significand(a), sb = significand(b);
        return sa != sb ? sa < sb : slopes[a] > slopes[b];
      });
    }
    for (size_t k = 0; k < order.size(); ++k) {
      const int64_t h = order[k];
      const bool joins = can_scale && k > 0 && !group_begin.empty() && fits_normal(slopes[h]) &&
                         fits_normal(slopes[group_heads[group_begin.back()]]);
      if (joins) {
        const int64_t lead = group_heads[group_begin.back()];
        int e_lead = 0, e_h = 0;
        const double m_lead = std::frexp(slopes[lead], &e_lead), m_h = std::frexp(slopes[h], &e_h);
        if (m_lead == m_h && e_lead > e_h) {
          shift[h] = e_lead - e_h;
          group_heads.push_back(h);
          continue;
        }
      }
      group_begin.push_back(static_cast<int64_t>(group_heads.size()));
      group_heads.push_back(h);
    }
    group_begin.push_back(static_cast<int64_t>(group_heads.size()));
  }

  int64_t groups() const { return static_cast<int64_t>(group_begin.size()) - 1; }

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

// AlibiRow for distances x0, x0 + 1, … (integers of magnitude ≤ 2^24, exact in f32) when the f32
// product slope·(−|x|) is the fp64 one rounded once to T, so f32 lanes give the same bits, twice as
// many per vector: for an f32 bias, a slope that is exactly an f32 (its 48-bit product is exact in
// fp64); for bf16 and f16, a slope that is a power of two (the f32 product is exact, then rounded
// once to T). max_bias 8 gives such slopes to every head when n_heads ≤ 8.
template <class T>
HWY_INLINE void AlibiRowExactF32(float slope, bool causal, int64_t n, lowp::Lane<T>* out,
                                 bool stream, double x0) {
  const auto scalar_at = [&](int64_t j) {
    const float v = static_cast<float>(value(slope, x0 + static_cast<double>(j), causal));
    if constexpr (sizeof(T) == 4) {
      return v;
    } else {
      return lowp::RoundF64<T>(v);
    }
  };
  const auto f32_at = [&](auto df, int64_t j) {
    const auto vslope = hn::Set(df, slope), zero = hn::Zero(df);
    const auto x = hn::Iota(df, static_cast<float>(x0 + static_cast<double>(j)));
    auto v = hn::IfThenZeroElse(hn::Eq(x, zero), hn::Mul(vslope, hn::Neg(hn::Abs(x))));
    return causal ? hn::IfThenElse(hn::Gt(x, zero),
                                   hn::Set(df, -std::numeric_limits<float>::infinity()), v)
                  : v;
  };
  const auto vector_at = [&](auto d, int64_t j) { return lowp::LanesAt<T>(d, j, f32_at); };
  WriteRow(out, n, stream, vector_at, scalar_at);
}

#if HWY_TARGET != HWY_SCALAR
// AlibiRow for a 16-bit T when every nonzero |value| of the row is a normal of T
// (Plan::fits_normal) and the distances are x0, x0 + 1, …: the fp64 value's bits rounded straight
// to T's, to nearest even in 64-bit lanes. Rounding through f32 to odd, as AlibiRow does, gives the
// same bits; this skips the f32 step's checks (a quarter of the instructions).
template <class T>
HWY_INLINE void AlibiRowNormal16(double slope, bool causal, int64_t n, uint16_t* out, double x0) {
  constexpr bool kBf16 = std::is_same_v<T, hwy::bfloat16_t>;
  constexpr int kDropped = kBf16 ? 52 - 7 : 52 - 10;  // fp64's significand bits past T's
  constexpr uint64_t kRebias = uint64_t{kBf16 ? 1023 - 127 : 1023 - 15} << (52 - kDropped);
  const uint16_t neg_inf = kBf16 ? 0xFF80 : 0xFC00;
  const hn::ScalableTag<double> dd;
  const hn::RebindToUnsigned<decltype(dd)> du;
  const hn::Rebind<uint16_t, decltype(dd)> d16;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const auto vslope = hn::Set(dd, slope), zero = hn::Zero(dd), step = hn::Set(dd, N);
  const auto one = hn::Set(du, 1),
             half_minus_one = hn::Set(du, (uint64_t{1} << (kDropped - 1)) - 1);
  const auto rebias = hn::Set(du, kRebias), sign = hn::Set(du, 0x8000);
  auto x = hn::Iota(dd, x0);
  int64_t j = 0;
  for (; j + N <= n; j += N, x = hn::Add(x, step)) {
    const auto u = hn::BitCast(du, hn::Mul(vslope, hn::Abs(x)));
    const auto rounded =
        hn::Add(u, hn::Add(half_minus_one, hn::And(hn::ShiftRight<kDropped>(u), one)));
    auto bits = hn::Or(hn::Sub(hn::ShiftRight<kDropped>(rounded), rebias), sign);
    bits = hn::IfThenZeroElse(hn::RebindMask(du, hn::Eq(x, zero)), bits);  // the diagonal: +0
    if (causal)
      bits = hn::IfThenElse(hn::RebindMask(du, hn::Gt(x, zero)), hn::Set(du, neg_inf), bits);
    hn::StoreU(hn::TruncateTo(d16, bits), d16, out + j);
  }
  for (; j < n; ++j) out[j] = lowp::RoundF64<T>(value(slope, x0 + static_cast<double>(j), causal));
}
#endif

// dst[0, n) = src[0, n)·2^−shift, exact: every nonzero finite value is a normal of T and stays one
// (Plan::fits_normal); zeros and −∞ are unchanged. For a 16-bit T, the exponent field's decrement.
template <class T>
HWY_INLINE void ScaledRow(const lowp::Lane<T>* src, lowp::Lane<T>* dst, int64_t n, int shift,
                          bool stream) {
  using L = lowp::Lane<T>;
  if constexpr (sizeof(T) == 4) {
    const float scale = std::ldexp(1.0f, -shift);
    WriteRow(
        dst, n, stream,
        [&](auto d, int64_t j) { return hn::Mul(hn::LoadU(d, src + j), hn::Set(d, scale)); },
        [&](int64_t j) { return src[j] * scale; });
  } else {
    constexpr uint16_t kExponent = std::is_same_v<T, hwy::bfloat16_t> ? 0x7F80 : 0x7C00;
    const auto delta =
        static_cast<uint16_t>(shift << (std::is_same_v<T, hwy::bfloat16_t> ? 7 : 10));
    const auto scalar_at = [&](int64_t j) -> L {
      const L v = src[j];
      const bool keep = (v & 0x7FFF) == 0 || (v & kExponent) == kExponent;
      return keep ? v : static_cast<L>(v - delta);
    };
    const auto vector_at = [&](auto d, int64_t j) {
      const auto v = hn::LoadU(d, src + j);
      const auto exponent = hn::Set(d, kExponent);
      const auto keep = hn::Or(hn::Eq(hn::And(v, hn::Set(d, 0x7FFF)), hn::Zero(d)),
                               hn::Eq(hn::And(v, exponent), exponent));
      return hn::IfThenElse(keep, v, hn::Sub(v, hn::Set(d, delta)));
    };
    WriteRow(dst, n, stream, vector_at, scalar_at);
  }
}

// Keys [j0, j0 + tk) of the direct row (h, i) of the bias.
template <class T>
HWY_INLINE void DirectRow(const Plan& plan, int64_t h, int64_t i, int64_t j0, int64_t tk) {
  const AlibiCall& call = *plan.call;
  const Tensor& bias = call.bias;
  lowp::Lane<T>* out = bias.as<lowp::Lane<T>>() + bias.offset(h, i, j0);
  // x = k_pos − q_pos, exact in fp64: positions lie in [0, 2^24].
  if (plan.lines.windows) {  // consecutive keys: x = first + start + j
    const double x0 = static_cast<double>(plan.lines.first + plan.lines.start[i] + j0);
    if (sizeof(T) == 4 ? plan.slope_is_f32[h] : plan.slope_is_pow2[h]) {
      return AlibiRowExactF32<T>(static_cast<float>(plan.slopes[h]), call.causal, tk, out,
                                 plan.stream, x0);
    }
#if HWY_TARGET != HWY_SCALAR
    if constexpr (sizeof(T) == 2) {
      if (!plan.stream && plan.fits_normal(plan.slopes[h])) {
        return AlibiRowNormal16<T>(plan.slopes[h], call.causal, tk, out, x0);
      }
    }
#endif
    AlibiRow<T>(plan.slopes[h], call.causal, tk, out, 1, plan.stream,
                [x0](auto d, int64_t at) { return hn::Iota(d, x0 + static_cast<double>(at)); });
  } else {
    const double qp = static_cast<double>(plan.q_pos[i]);
    AlibiRow<T>(plan.slopes[h], call.causal, tk, out, bias.strides[2], plan.stream,
                [&](auto d, int64_t at) {
                  return hn::Sub(hn::LoadU(d, plan.k_pos + j0 + at), hn::Set(d, qp));
                });
  }
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
      if (sizeof(T) == 4 ? plan.slope_is_f32[h] : plan.slope_is_pow2[h]) {
        AlibiRowExactF32<T>(static_cast<float>(plan.slopes[h]), call.causal, plan.lines.length,
                            line_values + h * plan.lines.length, /*stream=*/false, first);
        continue;
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
  // Items are (group, query, block of keys): the group's first head is computed, the others
  // scaled from it.
  const int64_t tq = bias.shape[1], tk = bias.shape[2];
  for (int64_t item = begin; item < end; ++item) {
    const int64_t row = item / plan.key_blocks, g = row / tq, i = row % tq;
    const int64_t j0 = item % plan.key_blocks * plan.key_block;
    const int64_t n = std::min(plan.key_block, tk - j0);
    const int64_t lead = plan.group_heads[plan.group_begin[g]];
    DirectRow<T>(plan, lead, i, j0, n);
    const L* src = bias.as<L>() + bias.offset(lead, i, j0);
    for (int64_t k = plan.group_begin[g] + 1; k < plan.group_begin[g + 1]; ++k) {
      const int64_t h = plan.group_heads[k];
      ScaledRow<T>(src, bias.as<L>() + bias.offset(h, i, j0), n, plan.shift[h], plan.stream);
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
  const alibi_detail::Plan plan(call);
  // One item per (group of heads, query, block of keys); groups are single heads and a row one
  // block unless rows are computed directly (decoding: few rows, which both threads then share).
  const int64_t items = plan.groups() * tq * plan.key_blocks;
  const int parts =
      plan_parts(call.threads, items,
                 kAlibiNanosPerElement * static_cast<double>(heads * tq) * static_cast<double>(tk) /
                     static_cast<double>(std::max<int64_t>(items, 1)));
  if (call.slopes) {
    for (int64_t h = 0; h < heads; ++h) store(*call.slopes, call.slopes->offset(h), plan.slopes[h]);
  }
  if (call.bias.numel() == 0) return;  // an empty view may have no data to offset from
  if (plan.value_lines) {
    const double per_line = 0.5 * static_cast<double>(plan.lines.length);
    parallel_for(heads, plan_parts(call.threads, heads, per_line),
                 [&](Range r) { part(plan, true, r.begin, r.end); });
  }
  parallel_for(items, parts, [&](Range r) { part(plan, false, r.begin, r.end); });
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
