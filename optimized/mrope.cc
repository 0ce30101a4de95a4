// mrope: M-RoPE as rope over a per-token cos/sin table.
//
// Pair i of token t turns by θ = p_a(i)·ω_i (mrope.h): a rope whose cache row t holds
// f·cos θ and f·sin θ of that token's own per-pair positions. This file fills such a table, one row
// per token: exact angles (the split frequencies of angles.h times each pair's position), double
// sin/cos vectorized over i (math-inl.h's SinCos), times f in double, rounded once to f32; then it
// runs the optimized rope of the same Highway target with that table, each part of the tokens
// filling its rows and rotating its tokens in one parallel region (table_rope.h).
// The coefficients are thus rounded once to f32 from fp64 values, exactly as rope's on-the-fly
// coefficients are, so rope's proof (optimized/rope.cc) carries over: bound 2 in the unit
// ulp_f32(f·‖(a, b)‖), 1 ulp of a bf16 or f16 output; rope's overflow guard (a row entry above 1,
// i.e. f > 1) recomputes huge outputs in double from these coefficients.
//
// Below f = 2⁻¹²⁶ the f32 coefficients would be subnormal (losing that bound), and below ω = 2⁻⁶⁰
// a nonzero sin θ may round to 0: such calls are computed in fp64 element by element as the
// reference does (scalar; no real model has them).
//
// Both the table (rows split across threads, each row computed alone) and rope are bitwise
// identical for every thread count.
#ifndef POSENC_OPTIMIZED_MROPE_SHARED
#define POSENC_OPTIMIZED_MROPE_SHARED
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "optimized/angles.h"
#include "optimized/optimized.h"
#include "optimized/table_rope.h"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/mrope.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows [begin, end) of the table: cos[t·stride + i] = f·cos θ_ti, sin likewise (unsigned: rope
// applies the inverse's sign). `axes[i]` is pair i's axis; the row stride is angles.padded().
void MropeRows(const MropeCall& call, const Angles& angles, const int* axes, float* cos, float* sin,
               int64_t begin, int64_t end) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd)), padded = angles.padded();
  const int64_t half = call.rotary_dim / 2;
  const auto f = hn::Set(dd, angles.attention_factor);
  auto pos = hwy::AllocateAligned<double>(padded);
  std::fill(pos.get(), pos.get() + padded, 0.0);
  for (int64_t t = begin; t < end; ++t) {
    double max_p = 0;
    for (int64_t i = 0; i < half; ++i) {
      pos[i] = static_cast<double>(load_index(call.positions, call.positions.offset(t, axes[i])));
      max_p = std::max(max_p, pos[i]);
    }
    const bool vector = max_p * angles.max_omega <= kMaxVectorAngle;
    float* c_row = cos + t * padded;
    float* s_row = sin + t * padded;
    for (int64_t i = 0; i < half; i += N) {
      auto s = hn::Zero(dd), c = hn::Zero(dd);
      if (HWY_LIKELY(vector)) {
        const auto p = hn::Load(dd, pos.get() + i);
        SinCos(dd, hn::Mul(p, hn::Load(dd, angles.hi.data() + i)),
               hn::Mul(p, hn::Load(dd, angles.lo.data() + i)), s, c);
      } else {
        HWY_ALIGN double sl[hn::MaxLanes(dd)], cl[hn::MaxLanes(dd)];
        for (int64_t lane = 0; lane < N; ++lane)
          sincos_libm(pos[i + lane] * angles.hi[i + lane], pos[i + lane] * angles.lo[i + lane],
                      sl[lane], cl[lane]);
        s = hn::Load(dd, sl);
        c = hn::Load(dd, cl);
      }
      hn::Store(DemoteToF32(df, hn::Mul(c, f)), df, c_row + i);
      hn::Store(DemoteToF32(df, hn::Mul(s, f)), df, s_row + i);
    }
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using MropeRowsFn = decltype(HWY_STATIC_DISPATCH(MropeRows));

namespace {

const TargetTable<MropeRowsFn>& rows_table() {
  static const TargetTable<MropeRowsFn> table = POSENC_TARGET_TABLE(MropeRows);
  return table;
}

// The optimized rope entry of the target that compiled `rows` ("rope/hwy:<Target>").
const Impl<RopeCall>& rope_of(MropeRowsFn* rows) {
  static const std::vector<Impl<RopeCall>> ropes = rope();
  static const auto by_rows = same_target(rows_table(), ropes, "rope");
  return *by_rows.at(rows);
}

// The reference's arithmetic, element by element: for attention factors below 2⁻¹²⁶.
void exact_mrope(const MropeCall& call, const Frequencies& freq) {
  const int64_t half = call.rotary_dim / 2;
  const double sign = call.inverse ? -1.0 : 1.0;
  auto rotate = [&](const Tensor& x, const Tensor& out, int64_t t, const std::vector<double>& c,
                    const std::vector<double>& s) {
    const bool in_place = same_view(x, out);
    for (int64_t h = 0; h < x.shape[1]; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t j0 = call.layout == RopeLayout::half_split ? i : 2 * i;
        const int64_t j1 = call.layout == RopeLayout::half_split ? i + half : 2 * i + 1;
        const double a = load(x, x.offset(t, h, j0)), b = load(x, x.offset(t, h, j1));
        store(out, out.offset(t, h, j0), a * c[i] - b * s[i]);
        store(out, out.offset(t, h, j1), a * s[i] + b * c[i]);
      }
      if (in_place) continue;
      const size_t size = dtype_size(x.dtype);
      for (int64_t j = call.rotary_dim; j < x.shape[2]; ++j)
        std::memcpy(out.as<char>() + out.offset(t, h, j) * size,
                    x.as<const char>() + x.offset(t, h, j) * size, size);
    }
  };
  std::vector<double> c(half), s(half);
  for (int64_t t = 0; t < call.q.shape[0]; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const int axis = mrope_axis(call.convention, call.mrope_section, i);
      const double angle =
          static_cast<double>(load_index(call.positions, call.positions.offset(t, axis))) *
          freq.inv_freq[i];
      c[i] = freq.attention_factor * std::cos(angle);
      s[i] = sign * freq.attention_factor * std::sin(angle);
    }
    rotate(call.q, call.q_out, t, c, s);
    if (call.k) rotate(*call.k, *call.k_out, t, c, s);
  }
}

void run_mrope(const MropeCall& call, MropeRowsFn* rows) {
  call.validate();
  const int64_t tokens = call.q.shape[0], half = call.rotary_dim / 2;
  if (tokens == 0) return;
  const Angles& angles = rope_angles(call.rotary_dim, call.base, call.scaling);
  // A factor outside f32's normal range would make the f32 coefficient table subnormal or ∞
  // where the reference's fp64 coefficients are not (∞ − ∞ = NaN for an output the reference
  // rounds to ∞): those calls take the exact path. So do calls with an ω below 2⁻⁶⁰ (bases like
  // 1e300): there sin θ can round to 0 in f32 where fp64 keeps it, and ∞·0 = NaN where the
  // reference's ∞·sin θ is ∞ (found by the mrope fuzz campaign).
  if (!(angles.attention_factor >= 0x1p-126 && angles.attention_factor <= 0x1p126) ||
      angles.tiny_omega) {
    exact_mrope(call, compute_frequencies(call.rotary_dim, call.base, call.scaling));
    return;
  }
  std::vector<int> axes(half);
  for (int64_t i = 0; i < half; ++i) axes[i] = mrope_axis(call.convention, call.mrope_section, i);
  run_table_rope(
      as_rope(call, Tensor{}), angles.padded(),
      [&](float* cos, float* sin, int64_t begin, int64_t end) {
        rows(call, angles, axes.data(), cos, sin, begin, end);
      },
      rope_of(rows));
}

}  // namespace

std::vector<Impl<MropeCall>> mrope() {
  constexpr uint64_t kVariants =
      variant::f32 | variant::bf16 | variant::f16 | variant::strided | variant::in_place |
      variant::mrope_half_split | variant::mrope_interleaved | variant::mrope_partial |
      variant::mrope_inverse | variant::mrope_key | variant::mrope_sectioned |
      variant::mrope_cycled | variant::all_scalings;
  return target_impls<MropeCall>("mrope", kVariants, /*bound=*/2, /*threaded=*/true, rows_table(),
                                 run_mrope);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
