// Per-target math shared by the family files (included after hwy/highway.h, once per target):
// sin/cos of exact angles in double, f64 → f32 rounding and a fused multiply-add for f32 on every
// target.
//
// hwy/contrib/math's Sin and Cos (Highway 1.0.3) are documented for |x| ≤ 39000 only; rope needs
// angles up to 2²⁴ rad, so this file reduces θ modulo π itself (Cody–Waite with a 25-bit π₁, exact
// because k < 2²⁵) and evaluates near-minimax polynomials on [−π/2, π/2] (within 2⁻⁴⁶·⁸;
// sincos_test checks that below 4π on every target, angles_test the whole against long double to
// that one's own 2⁻³⁷ resolution at 2²⁷ rad).

#if defined(POSENC_OPTIMIZED_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POSENC_OPTIMIZED_MATH_INL_H_
#undef POSENC_OPTIMIZED_MATH_INL_H_
#else
#define POSENC_OPTIMIZED_MATH_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "optimized/angles.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 1.5·2⁵²: adding it to x ≤ 2⁵¹ rounds x to an integer k (ties to even) and leaves k's low bit in
// the sum's lowest mantissa bit.
inline constexpr double kRoundingShift = 6755399441055744.0;

// sin θ and cos θ for double lanes θ = hi + lo, 0 ≤ θ ≤ kMaxVectorAngle, given
// shifted = kRoundingShift + k for an integer k within 2⁻²⁶ of rounding θ/π (SinCos below, or a
// caller's own p·(ω/π)): |θ − kπ| ≤ π/2 + 10⁻⁷, inside the polynomials' [0, 1.5708].
template <class D, class V = hn::VFromD<D>>
HWY_INLINE void SinCosShifted(D d, V hi, V lo, V shifted, V& sin, V& cos) {
  // k < 2²⁵ and π₁ has 25 significant bits, so k·π₁ is exact and so is hi − k·π₁ (Sterbenz);
  // π₂ = π − π₁ to double precision, its error (~10⁻²⁴) times k is below 2⁻⁵⁶. The two halves,
  // hi − k·π₁ and lo − k·π₂, in parallel: a shorter dependent chain than one after the other.
  constexpr double kPi1 = 3.1415926218032836914;   // 0x1.921fb5p+1
  constexpr double kPi2 = 3.1786509547056390e-08;  // (π − π₁) rounded
  const V k = hn::Sub(shifted, hn::Set(d, kRoundingShift));
  const V r = hn::Add(hn::NegMulAdd(k, hn::Set(d, kPi1), hi),
                      hn::NegMulAdd(k, hn::Set(d, kPi2), lo));  // r in [−π/2, π/2]
  const V z = hn::Mul(r, r);
  // Near-minimax polynomials in z = r² on [0, 1.5708²] (tools/sincos_fit.py, Chebyshev fits in
  // 50 digits): with these double coefficients sin r = r + r·z·S(z) is within 2⁻⁵⁰·² of sin and
  // cos r = 1 − z·C(z) within 2⁻⁴⁶·⁸ of cos, with one and two terms fewer than the Taylor
  // series they replace (2⁻⁴⁴·⁴ and 2⁻⁴⁸).
  V ps = hn::Set(d, -7.408053788329884e-13);
  ps = hn::MulAdd(ps, z, hn::Set(d, 1.6050972169402003e-10));
  ps = hn::MulAdd(ps, z, hn::Set(d, -2.505197291965929e-08));
  ps = hn::MulAdd(ps, z, hn::Set(d, 2.755731805566406e-06));
  ps = hn::MulAdd(ps, z, hn::Set(d, -0.00019841269836468913));
  ps = hn::MulAdd(ps, z, hn::Set(d, 0.008333333333325933));
  ps = hn::MulAdd(ps, z, hn::Set(d, -0.1666666666666665));
  const V sin_r = hn::MulAdd(hn::Mul(r, z), ps, r);
  V pc = hn::Set(d, 1.1064988652492443e-11);
  pc = hn::MulAdd(pc, z, hn::Set(d, -2.086306791940313e-09));
  pc = hn::MulAdd(pc, z, hn::Set(d, 2.755708954746659e-07));
  pc = hn::MulAdd(pc, z, hn::Set(d, -2.4801585321058696e-05));
  pc = hn::MulAdd(pc, z, hn::Set(d, 0.0013888888880751128));
  pc = hn::MulAdd(pc, z, hn::Set(d, -0.04166666666654122));
  pc = hn::MulAdd(pc, z, hn::Set(d, 0.49999999999999684));
  const V cos_r = hn::NegMulAdd(z, pc, hn::Set(d, 1.0));
  // sin(r + kπ) = (−1)^k sin r, likewise cos.
  const hn::RebindToSigned<D> di;
  const V sign = hn::BitCast(d, hn::ShiftLeft<63>(hn::BitCast(di, shifted)));
  sin = hn::Xor(sin_r, sign);
  cos = hn::Xor(cos_r, sign);
}

// sin θ and cos θ for double lanes θ = hi + lo, 0 ≤ θ ≤ kMaxVectorAngle, |lo| small next to a turn
// or hi + lo already rounded (the exact product pair from Angles is either): k from θ/π rounded in
// the same multiply-add that adds the shift (off by one at most where θ/π is within 2⁻²⁷ of a
// half).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE void SinCos(D d, V hi, V lo, V& sin, V& cos) {
  SinCosShifted(
      d, hi, lo,
      hn::MulAdd(hn::Add(hi, lo), hn::Set(d, 0.31830988618379067154), hn::Set(d, kRoundingShift)),
      sin, cos);
}

// f(i, sin, cos) with sin and cos of θ_j = position·ω_j in the lanes j of the vectors i = i0,
// i0 + Lanes(d), … < i0 + n (i0 a multiple of the lane count, within angles.padded()): exact
// angles, libm past kMaxVectorAngle. The range check is made once for the row: inside the loop it
// is reloaded per vector (any double store may alias the angles), two scalar flops on the ports
// the polynomials need.
template <class D, class F>
HWY_INLINE void ForEachAngleSinCos(D d, const Angles& angles, int64_t position, int64_t i0,
                                   int64_t n, const F& f) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const double p = static_cast<double>(position);
  if (HWY_LIKELY(angles.vector_range(position))) {
    const auto vp = hn::Set(d, p);
    const double* hi = angles.hi.data();
    const double* lo = angles.lo.data();
    const double* over_pi = angles.over_pi.data();
    for (int64_t i = i0; i < i0 + n; i += N) {
      // k from p·(ω/π): one multiply-add ahead of the products, not after their sum.
      hn::VFromD<D> sin, cos;
      SinCosShifted(d, hn::Mul(vp, hn::LoadU(d, hi + i)), hn::Mul(vp, hn::LoadU(d, lo + i)),
                    hn::MulAdd(vp, hn::LoadU(d, over_pi + i), hn::Set(d, kRoundingShift)), sin,
                    cos);
      f(i, sin, cos);
    }
    return;
  }
  HWY_ALIGN double s[hn::MaxLanes(D())], c[hn::MaxLanes(D())];
  for (int64_t i = i0; i < i0 + n; i += N) {
    for (int64_t lane = 0; lane < N; ++lane)
      sincos_libm(p * angles.hi[i + lane], p * angles.lo[i + lane], s[lane], c[lane]);
    f(i, hn::Load(d, s), hn::Load(d, c));
  }
}

// sin and cos (double) of position·ω_i for every angle i < angles.padded(), item after item. A
// fresh sin/cos costs about forty flops per angle; an item whose position is the previous item's +
// 1 instead rotates the previous values by (cos ω_i, sin ω_i): four flops, and an error of a few
// 2⁻⁵³ per step. Chains restart (fresh sin/cos) at every item index that is a multiple of
// kAnchorEvery and wherever positions are not consecutive, so at most kAnchorEvery − 1 steps
// accumulate. A part that starts inside a chain first replays it from its start: every item's
// values depend only on the positions and its index, never on where a part begins, so the output is
// bitwise identical for every thread count.
template <class D>
class AngleWalker {
 public:
  static constexpr int64_t kAnchorEvery = 16;

  // `scratch` holds 4·angles.padded() doubles, aligned for D.
  AngleWalker(D d, const Angles& angles, double* scratch)
      : d_(d),
        angles_(angles),
        count_(angles.padded()),
        sin_(scratch),
        cos_(scratch + count_),
        step_sin_(scratch + 2 * count_),
        step_cos_(scratch + 3 * count_) {}

  const double* sin() const { return sin_; }
  const double* cos() const { return cos_; }

  // Values for item `item`; position(j) gives any item's position.
  template <class PositionOf>
  void At(int64_t item, const PositionOf& position) {
    const int64_t p = position(item);
    if (!Chains(item, p, position)) {
      Fresh(p);
    } else if (last_item_ == item - 1) {
      Step();
    } else {  // a part's first item inside a chain: replay the chain from its start
      int64_t start = item - 1;
      while (Chains(start, position(start), position)) --start;
      Fresh(position(start));
      for (int64_t j = start + 1; j <= item; ++j) Step();
    }
    last_item_ = item;
  }

 private:
  template <class PositionOf>
  static bool Chains(int64_t item, int64_t p, const PositionOf& position) {
    return item % kAnchorEvery != 0 && position(item - 1) == p - 1;
  }

  void Fresh(int64_t p) {
    ForEachAngleSinCos(d_, angles_, p, 0, count_, [&](int64_t i, auto s, auto c) {
      hn::Store(s, d_, sin_ + i);
      hn::Store(c, d_, cos_ + i);
    });
  }

  void Step() {
    const int64_t N = static_cast<int64_t>(hn::Lanes(d_));
    if (!have_step_) {  // (cos ω, sin ω): position 1
      ForEachAngleSinCos(d_, angles_, 1, 0, count_, [&](int64_t i, auto s, auto c) {
        hn::Store(s, d_, step_sin_ + i);
        hn::Store(c, d_, step_cos_ + i);
      });
      have_step_ = true;
    }
    for (int64_t i = 0; i < count_; i += N) {
      const auto s = hn::Load(d_, sin_ + i), c = hn::Load(d_, cos_ + i);
      const auto ss = hn::Load(d_, step_sin_ + i), sc = hn::Load(d_, step_cos_ + i);
      hn::Store(hn::MulAdd(s, sc, hn::Mul(c, ss)), d_, sin_ + i);
      hn::Store(hn::MulSub(c, sc, hn::Mul(s, ss)), d_, cos_ + i);
    }
  }

  D d_;
  const Angles& angles_;
  int64_t count_;
  double *sin_, *cos_, *step_sin_, *step_cos_;
  bool have_step_ = false;
  int64_t last_item_ = -2;
};

// f64 lanes to f32 rounded to nearest on every target: past the f32 range that is ±∞ (±FLT_MAX
// only within half an ulp of it), as x86's conversions give. Highway 1.0.3's EMU128 and SCALAR
// DemoteTo clamp every such value to ±FLT_MAX, infinities included (emu128-inl.h, scalar-inl.h).
HWY_INLINE float RoundToF32(double x) {
  constexpr double kMax = 0x1.fffffep127, kHalfUlpPast = 0x1.ffffffp127;  // from here: ±∞
  if (std::fabs(x) >= kHalfUlpPast) return static_cast<float>(std::copysign(HUGE_VAL, x));
  if (std::fabs(x) > kMax) return static_cast<float>(std::copysign(kMax, x));
  return static_cast<float>(x);  // in range, or NaN
}

template <class DF, class VD>
HWY_INLINE hn::VFromD<DF> DemoteToF32(DF df, VD v) {
#if HWY_TARGET == HWY_EMU128 || HWY_TARGET == HWY_SCALAR
  const hn::Rebind<double, DF> dd;
  HWY_ALIGN double wide[hn::MaxLanes(dd)];
  HWY_ALIGN float narrow[hn::MaxLanes(df)];
  hn::Store(v, dd, wide);
  for (size_t i = 0; i < hn::Lanes(df); ++i) narrow[i] = RoundToF32(wide[i]);
  return hn::Load(df, narrow);
#else
  return hn::DemoteTo(df, v);
#endif
}

// a·b + c for f32 lanes with one rounding on every target: native FMA where the target has it,
// else the exact product and the sum in double, rounded to f32 (off from fused by at most 2⁻²⁹
// ulp, and only in double-rounding ties).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V FusedMulAdd(D d, V a, V b, V c) {
#if HWY_NATIVE_FMA
  (void)d;
  return hn::MulAdd(a, b, c);
#elif HWY_TARGET == HWY_SCALAR
  return hn::Set(d,
                 RoundToF32(static_cast<double>(hn::GetLane(a)) * hn::GetLane(b) + hn::GetLane(c)));
#else
  const hn::Half<D> dh;
  const hn::Rebind<double, decltype(dh)> dd;
  const auto lower = [&](V v) { return hn::PromoteTo(dd, hn::LowerHalf(dh, v)); };
  const auto upper = [&](V v) { return hn::PromoteTo(dd, hn::UpperHalf(dh, v)); };
  const auto lo = hn::Add(hn::Mul(lower(a), lower(b)), lower(c));
  const auto hi = hn::Add(hn::Mul(upper(a), upper(b)), upper(c));
  return hn::Combine(d, DemoteToF32(dh, hi), DemoteToF32(dh, lo));
#endif
}

// a·b − c with one rounding on every target (see FusedMulAdd).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V FusedMulSub(D d, V a, V b, V c) {
#if HWY_NATIVE_FMA
  (void)d;
  return hn::MulSub(a, b, c);
#else
  return FusedMulAdd(d, a, b, hn::Neg(c));
#endif
}

// e^x for f32 lanes x ≤ 0, the softmax weight: Highway's Exp (Highway 1.0.3: the same reduction
// by ln 2 in two parts and the same degree-5 polynomial, within 1 ulp), with q = round(x/ln 2)
// read from the low bits of x/ln 2 + 1.5·2²³ and 2^q built from them in one step. That step needs
// q ≥ −126, so below −87 the result is 0 where e^x is under 2⁻¹²⁵: next to a softmax sum ≥ 1 (its
// maximum's own weight) that is off by less than 2⁻¹²⁵ per key. 19 operations to Exp's 26.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V SoftmaxExp(D d, V x) {
  const hn::RebindToSigned<D> di;
  const auto lowest = hn::Set(d, -87.0f);
  const auto clamped = hn::Max(x, lowest);
  const auto shift = hn::Set(d, 12582912.0f);  // 1.5·2²³: its ulp is 1
  const auto shifted = hn::MulAdd(clamped, hn::Set(d, 1.442695040888963407359924681f), shift);
  const auto q = hn::Sub(shifted, shift);
  auto r = hn::MulAdd(q, hn::Set(d, -0.693145751953125f), clamped);
  r = hn::MulAdd(q, hn::Set(d, -1.428606765330187045e-6f), r);
  const auto r2 = hn::Mul(r, r), r4 = hn::Mul(r2, r2);
  const auto p01 = hn::MulAdd(hn::Set(d, 0.166666671633720397949219f), r, hn::Set(d, 0.5f));
  const auto p23 = hn::MulAdd(hn::Set(d, 0.00833336077630519866943359f), r,
                              hn::Set(d, 0.0416664853692054748535156f));
  const auto p45 = hn::MulAdd(hn::Set(d, 0.000198527617612853646278381f), r,
                              hn::Set(d, 0.00139304355252534151077271f));
  const auto poly = hn::MulAdd(p45, r4, hn::MulAdd(p23, r2, p01));
  const auto mantissa = hn::Add(hn::MulAdd(poly, r2, r), hn::Set(d, 1.0f));
  // shifted's bits are those of 1.5·2²³ plus q: q + 127 is 2^q's biased exponent.
  const auto exponent = hn::Sub(hn::BitCast(di, shifted), hn::Set(di, 0x4B400000 - 127));
  const auto pow2 = hn::BitCast(d, hn::ShiftLeft<23>(exponent));
  return hn::IfThenZeroElse(hn::Lt(x, lowest), hn::Mul(mantissa, pow2));
}

// ---- bf16 and f16 lanes (every optimized kernel) -----------------------------------------------
// Highway 1.0.3's bf16 DemoteTo truncates and its emulated f16 conversions (no F16C) truncate and
// turn ±∞ into 65536: these convert with integer lane arithmetic, or F16C's vcvtps2ph/vcvtph2ps.
//
// One rounding from fp64: rounding fp64 → f32 → bf16/f16 to nearest twice can land on a midpoint of
// the narrow format that the fp64 value was not on. Rounding fp64 → f32 to ODD first (inexact
// results keep an odd last bit, so they are never a midpoint nor an even neighbour) makes the
// second rounding, to nearest even, the correctly rounded one, because f32 has at least two bits
// more than bf16 (8) and f16 (11), subnormal ranges included (f32's subnormal step 2⁻¹⁴⁹ is far
// below bf16's 2⁻¹³³ and f16's 2⁻²⁴); past FLT_MAX round-to-odd gives FLT_MAX, which rounds to ∞ in
// both (Boldo & Melquiond, "When double rounding is odd", 2005).
namespace lowp {

#undef POSENC_LOWP_F16C
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define POSENC_LOWP_F16C 1
#else
#define POSENC_LOWP_F16C 0
#endif

// The storage lane of an element type: float stays float, 16-bit types are their bits.
template <class T>
using Lane = std::conditional_t<sizeof(T) == 2, uint16_t, float>;

// A vector of f32 lanes from Lanes(d) elements of T at p: exact for every T.
template <class D>
HWY_INLINE hn::VFromD<D> LoadF32(D d, const float* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::VFromD<D> LoadF32(D d, const hwy::bfloat16_t* p) {
  return hn::PromoteTo(d, hn::LoadU(hn::Rebind<hwy::bfloat16_t, D>(), p));
}
template <class D>
HWY_INLINE hn::VFromD<D> LoadF32(D d, const hwy::float16_t* p) {
#if POSENC_LOWP_F16C
  return hn::PromoteTo(d, hn::LoadU(hn::Rebind<hwy::float16_t, D>(), p));
#else
  // The magnitude's bits moved to f32's fields and scaled by 2¹¹² (= 2^(127 − 15)) is exact for
  // normals and subnormals alike; exponent 31 (∞, NaN) becomes 255.
  const hn::RebindToUnsigned<D> du;
  const hn::Rebind<uint16_t, D> du16;
  const auto h = hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  const auto magnitude =
      hn::BitCast(du, hn::Mul(hn::BitCast(d, hn::ShiftLeft<13>(hn::And(h, hn::Set(du, 0x7FFF)))),
                              hn::Set(d, 0x1p112f)));
  const auto special = hn::Eq(hn::And(h, hn::Set(du, 0x7C00)), hn::Set(du, 0x7C00));
  const auto bits = hn::IfThenElse(special, hn::Or(magnitude, hn::Set(du, 0x7F800000)), magnitude);
  return hn::BitCast(d, hn::Or(bits, hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000)))));
#endif
}

// The low 16 bits of each u32 lane (all ≤ 0xFFFF), as 16-bit lanes.
template <class DU>
HWY_INLINE hn::VFromD<hn::Rebind<uint16_t, DU>> Low16(DU /* du */, hn::VFromD<DU> bits) {
  return hn::DemoteTo(hn::Rebind<uint16_t, DU>(), hn::BitCast(hn::RebindToSigned<DU>(), bits));
}

// The bits of v rounded once to T (bf16 or f16), to nearest even, as 16-bit lanes.
template <class T, class D>
HWY_INLINE hn::VFromD<hn::Rebind<uint16_t, D>> Bits16(D d, hn::VFromD<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto u = hn::BitCast(du, v);
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    // Adding 0x7FFF plus the kept part's last bit carries into it exactly when the dropped 16 bits
    // exceed half, or equal half with the kept part odd; a NaN is kept quiet.
    const auto odd = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1));
    const auto rounded = hn::Add(u, hn::Add(hn::Set(du, 0x7FFF), odd));
    const auto nan = hn::RebindMask(du, hn::IsNaN(v));
    return Low16(
        du, hn::ShiftRight<16>(hn::IfThenElse(nan, hn::Or(u, hn::Set(du, 0x400000)), rounded)));
  } else {
#if POSENC_LOWP_F16C
    return hn::BitCast(hn::Rebind<uint16_t, D>(), hn::DemoteTo(hn::Rebind<hwy::float16_t, D>(), v));
#else
    // Fabian Giesen's float_to_half_fast3_rtne, lane-wise.
    const hn::RebindToSigned<D> di;
    const auto sign = hn::And(u, hn::Set(du, 0x80000000u));
    const auto a = hn::Xor(u, sign);  // |v|
    const auto ai = hn::BitCast(di, a);
    // |v| ≥ 65536, ∞ or NaN: ∞ or a quiet NaN (65520 ≤ |v| < 65536 carries into ∞ below).
    const auto big = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7F800000))),
                                    hn::Set(du, 0x7E00), hn::Set(du, 0x7C00));
    // |v| < 2⁻¹⁴: adding ½ (ulp 2⁻²⁴, f16's subnormal step) rounds to nearest even.
    const auto tiny = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(d, a), hn::Set(d, 0.5f))),
                              hn::Set(du, 0x3F000000));
    // Normal: rebias the exponent (−112 << 23) and round the 13 dropped bits to nearest even.
    const auto odd = hn::And(hn::ShiftRight<13>(a), hn::Set(du, 1));
    const auto normal = hn::ShiftRight<13>(hn::Add(a, hn::Add(hn::Set(du, 0xC8000FFFu), odd)));
    const auto is_big = hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x477FFFFF)));
    const auto is_tiny = hn::RebindMask(du, hn::Lt(ai, hn::Set(di, 0x38800000)));
    const auto bits = hn::IfThenElse(is_big, big, hn::IfThenElse(is_tiny, tiny, normal));
    return Low16(du, hn::Or(bits, hn::ShiftRight<16>(sign)));
#endif
  }
}

// Stores v rounded once to T, to nearest even.
template <class D>
HWY_INLINE void StoreF32(D d, hn::VFromD<D> v, float* p) {
  hn::StoreU(v, d, p);
}
template <class D, class T, hwy::EnableIf<sizeof(T) == 2>* = nullptr>
HWY_INLINE void StoreF32(D d, hn::VFromD<D> v, T* p) {
  hn::StoreU(Bits16<T>(d, v), hn::Rebind<uint16_t, D>(), reinterpret_cast<uint16_t*>(p));
}

// f64 lanes to f32 rounded to odd: the nearest-even result, moved one step toward the exact value
// when it is inexact and even. NaN stays NaN, ±∞ stays ±∞, a finite value past FLT_MAX gives
// ±FLT_MAX, and one below the least subnormal ±2⁻¹⁴⁹.
template <class DF, class VD>
HWY_INLINE hn::VFromD<DF> DemoteToF32RoundToOdd(DF df, VD v) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  if constexpr (hn::MaxLanes(DF()) == 8) {
    // AVX-512's embedded rounding converts toward zero in one instruction; the last bit is then
    // set where that was inexact (an ordered compare: NaN lanes stay as converted). The same bits
    // as the steps below, in a third of the operations.
    const __m256 toward_zero = _mm512_cvt_roundpd_ps(v.raw, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(toward_zero), v.raw, _CMP_NEQ_OQ);
    const __m256i bits = _mm256_castps_si256(toward_zero);
    return hn::VFromD<DF>{
        _mm256_castsi256_ps(_mm256_mask_or_epi32(bits, inexact, bits, _mm256_set1_epi32(1)))};
  }
#endif
  const hn::Rebind<double, DF> dd;
  const hn::RebindToSigned<DF> di;
  const auto f = DemoteToF32(df, v);
  const auto back = hn::Abs(hn::PromoteTo(dd, f)), exact = hn::Abs(v);
  // +1, −1 or 0 steps of the magnitude (the bits' low 31), computed in double lanes (NaN: 0).
  const auto step = hn::IfThenElse(hn::Lt(back, exact), hn::Set(dd, 1.0),
                                   hn::IfThenElseZero(hn::Gt(back, exact), hn::Set(dd, -1.0)));
  const auto step_i = hn::ConvertTo(di, DemoteToF32(df, step));
  const auto bits = hn::BitCast(di, f);
  const auto even = hn::Eq(hn::And(bits, hn::Set(di, 1)), hn::Zero(di));
  return hn::BitCast(df, hn::Add(bits, hn::IfThenElseZero(even, step_i)));
}

// The same for one double.
HWY_INLINE float RoundToOddF32(double x) {
  const float f = RoundToF32(x);
  const double back = std::fabs(static_cast<double>(f)), exact = std::fabs(x);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 1) == 0 && back != exact && !std::isnan(x)) bits += back < exact ? 1 : -1;
  float odd;
  std::memcpy(&odd, &bits, sizeof odd);
  return odd;
}

// x rounded once to T, to nearest even: a float, or the 16 bits of a bf16 or f16.
template <class T>
HWY_INLINE Lane<T> RoundF64(double x) {
  if constexpr (sizeof(T) == 4) {
    return RoundToF32(x);
  } else {
    const hn::CappedTag<float, 1> d1;
    return hn::GetLane(Bits16<T>(d1, hn::Set(d1, RoundToOddF32(x))));
  }
}

// A full vector of T's storage lanes (float, or 16-bit) for elements j, j + 1, ... from
// f32_at(df, k), the f32 vector of elements k, k + 1, ..., each rounded once more to T (f32:
// as is). Two f32 vectors make one 16-bit vector (one lane each on SCALAR).
template <class T, class DL, class F32At>
HWY_INLINE hn::VFromD<DL> LanesAt(DL dl, int64_t j, const F32At& f32_at) {
  if constexpr (sizeof(T) == 4) {
    return f32_at(dl, j);
  } else {
#if HWY_TARGET == HWY_SCALAR  // one lane, no Combine
    const hn::CappedTag<float, 1> d1;
    return hn::BitCast(dl, Bits16<T>(d1, f32_at(d1, j)));
#else
    const hn::Half<DL> dh;
    const hn::Rebind<float, decltype(dh)> df;  // a full f32 vector: half of dl's lanes
    const int64_t H = static_cast<int64_t>(hn::Lanes(df));
    return hn::Combine(dl, Bits16<T>(df, f32_at(df, j + H)), Bits16<T>(df, f32_at(df, j)));
#endif
  }
}

}  // namespace lowp

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POSENC_OPTIMIZED_MATH_INL_H_
