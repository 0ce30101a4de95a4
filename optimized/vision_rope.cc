// vision_rope: 2D vision RoPE as rope over a per-token cos/sin table.
//
// Pair i of token t turns by θ = (p_a(i) + offset)·ω_k(i) (vision_rope.h): a rope whose cache row
// t holds cos θ and sin θ of that token's own per-pair angles. As optimized/mrope.cc does, this
// file fills such a table, one row per token: exact angles (rope's split frequencies of angles.h,
// gathered into pair order, times each pair's position), double sin/cos vectorized over i
// (math-inl.h's SinCos), rounded once to f32; then it runs the optimized rope of the same Highway
// target with that table, each part of the tokens filling its rows and rotating its tokens in one
// parallel region (table_rope.h). The coefficients are thus rounded once to
// f32 from fp64 values, exactly as rope's on-the-fly coefficients are, so rope's proof
// (optimized/rope.cc) carries over: bound 2 in the unit ulp_f32(‖(a, b)‖), 1 ulp of a bf16 or f16
// output. The attention factor is 1 (no scaling), so no subnormal or overflow path is needed.
// One exception to rounding to nearest: a nonzero sin θ of magnitude ≤ 2⁻¹⁵⁰ (an ω that small
// needs a base like 1e300) would round to 0, and ∞·0 = NaN where the reference's ∞·sin θ is ±∞
// (found by the vision_rope fuzz campaign). It is stored as ±2⁻¹⁴⁹, which adds at most
// |b|·2⁻¹⁴⁹ < 2⁻¹²⁵ of the unit to an output's error.
//
// Both the table (rows split across threads, each row computed alone) and rope are bitwise
// identical for every thread count.
#ifndef POSENC_OPTIMIZED_VISION_ROPE_SHARED
#define POSENC_OPTIMIZED_VISION_ROPE_SHARED
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <cmath>

#include "optimized/angles.h"
#include "optimized/optimized.h"
#include "optimized/table_rope.h"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/vision_rope.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows [begin, end) of the table: cos[t·stride + i] = cos θ_ti, sin likewise (unsigned: rope
// applies the inverse's sign). `pairs` holds pair i's axis and ω = hi + lo, in pair order; the row
// stride is pairs.padded().
void VisionRopeRows(const VisionRopeCall& call, const Angles& pairs, const int* axes, float* cos,
                    float* sin, int64_t begin, int64_t end) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd)), padded = pairs.padded();
  const int64_t half = call.rotary_dim / 2;
  auto pos = hwy::AllocateAligned<double>(padded);
  std::fill(pos.get(), pos.get() + padded, 0.0);
  for (int64_t t = begin; t < end; ++t) {
    const double p[2] = {
        static_cast<double>(load_index(call.positions, call.positions.offset(t, 0)) +
                            call.position_offset),
        static_cast<double>(load_index(call.positions, call.positions.offset(t, 1)) +
                            call.position_offset)};
    for (int64_t i = 0; i < half; ++i) pos[i] = p[axes[i]];
    const bool vector = std::max(p[0], p[1]) * pairs.max_omega <= kMaxVectorAngle;
    float* c_row = cos + t * padded;
    float* s_row = sin + t * padded;
    for (int64_t i = 0; i < half; i += N) {
      auto s = hn::Zero(dd), c = hn::Zero(dd);
      if (HWY_LIKELY(vector)) {
        const auto v = hn::Load(dd, pos.get() + i);
        SinCos(dd, hn::Mul(v, hn::Load(dd, pairs.hi.data() + i)),
               hn::Mul(v, hn::Load(dd, pairs.lo.data() + i)), s, c);
      } else {
        HWY_ALIGN double sl[hn::MaxLanes(dd)], cl[hn::MaxLanes(dd)];
        for (int64_t lane = 0; lane < N; ++lane)
          sincos_libm(pos[i + lane] * pairs.hi[i + lane], pos[i + lane] * pairs.lo[i + lane],
                      sl[lane], cl[lane]);
        s = hn::Load(dd, sl);
        c = hn::Load(dd, cl);
      }
      // See the top comment: a vanishing sin θ is stored as ±2⁻¹⁴⁹, not 0.
      const auto vanishing =
          hn::And(hn::Le(hn::Abs(s), hn::Set(dd, 0x1p-150)), hn::Ne(s, hn::Zero(dd)));
      s = hn::IfThenElse(vanishing, hn::CopySign(hn::Set(dd, 0x1p-149), s), s);
      hn::Store(DemoteToF32(df, c), df, c_row + i);
      hn::Store(DemoteToF32(df, s), df, s_row + i);
    }
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using VisionRopeRowsFn = decltype(HWY_STATIC_DISPATCH(VisionRopeRows));

namespace {

const TargetTable<VisionRopeRowsFn>& rows_table() {
  static const TargetTable<VisionRopeRowsFn> table = POSENC_TARGET_TABLE(VisionRopeRows);
  return table;
}

// The optimized rope entry of the target that compiled `rows` ("rope/hwy:<Target>").
const Impl<RopeCall>& rope_of(VisionRopeRowsFn* rows) {
  static const std::vector<Impl<RopeCall>> ropes = rope();
  static const auto by_rows = same_target(rows_table(), ropes, "rope");
  return *by_rows.at(rows);
}

void run_vision_rope(const VisionRopeCall& call, VisionRopeRowsFn* rows) {
  call.validate();
  const int64_t tokens = call.q.shape[0], half = call.rotary_dim / 2;
  if (tokens == 0) return;
  // rope's ω_k of dim d (memoized), gathered into pair order and split again: the same hi, lo and
  // ω/π bits, and none of rope's per-position memos, which follow rope's order, not the pairs'.
  const Angles& rope_omegas = rope_angles(call.rotary_dim, call.base, RopeScaling{});
  Frequencies gathered{std::vector<double>(half), rope_omegas.attention_factor};
  std::vector<int> axes(half);
  for (int64_t i = 0; i < half; ++i) {
    const int64_t k = vision_rope_frequency(call.convention, call.rotary_dim, i);
    gathered.inv_freq[i] = rope_omegas.hi[k] + rope_omegas.lo[k];  // exact: ω itself
    axes[i] = vision_rope_axis(call.axis_order, call.rotary_dim, i);
  }
  const Angles pairs = split_angles(gathered);
  run_table_rope(
      as_rope(call, Tensor{}), pairs.padded(),
      [&](float* cos, float* sin, int64_t begin, int64_t end) {
        rows(call, pairs, axes.data(), cos, sin, begin, end);
      },
      rope_of(rows));
}

}  // namespace

std::vector<Impl<VisionRopeCall>> vision_rope() {
  constexpr uint64_t kVariants = variant::f32 | variant::bf16 | variant::f16 | variant::strided |
                                 variant::in_place | variant::vision_rope_half_split |
                                 variant::vision_rope_interleaved | variant::vision_rope_partial |
                                 variant::vision_rope_inverse | variant::vision_rope_key |
                                 variant::vision_rope_axial | variant::vision_rope_pixtral |
                                 variant::vision_rope_column_first | variant::vision_rope_offset;
  return target_impls<VisionRopeCall>("vision_rope", kVariants, /*bound=*/2, /*threaded=*/true,
                                      rows_table(), run_vision_rope);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
