// rope: rotate the first rotary_dim dims of every q (and k) head of token t by θ_i = p_t·ω_i.
//
// Per token, the coefficients c_i = f·cos θ_i and s_i = ±f·sin θ_i are rounded once to f32, from
// exact angles and double sin/cos (vectorized over i, shared by all heads; consecutive positions
// step by one rotation, see AngleWalker) or from the cache row. Each output is then one FMA over
// one rounded product, e.g. a' = fma(a, c, −round(b·s)), as fast as a plain f32 loop.
//
// Accuracy, in the unit u = ulp_f32(f·‖(a, b)‖): before its final rounding the value is off the
// exact one by |a|·δc + |b|·δs + ½ulp(b·s) ≤ 1.5u (δ ≤ ½ulp of c, s; the sup is approached for
// f → 1⁺, ‖(a, b)‖ → 2⁻, θ → 0). The final rounding and the reference's own rounding then land on
// the output grid, whose step is at most u: two grid points within 1.5u + ½ + ½ steps of each
// other are at most 2 steps apart. So every element is within 2u of the reference (bound 2;
// measured 2.0 against the correctly rounded exact value, 1.62 against the exact value). Targets
// without FMA emulate it in double (a product of floats is exact there).
//
// Where that f32 arithmetic can disagree with the reference about overflow, it is not used: an
// output of magnitude ≥ 2¹²⁷ or NaN is recomputed exactly as the reference does (ExactPairs). A
// huge factor or input can overflow a coefficient or product (∞ − ∞ = NaN where the reference's
// fp64 value is finite or ±∞), and near FLT_MAX the two roundings can differ about ±∞; any such
// output is ≥ 2¹²⁷ or NaN here (finite products keep it within 2u of the exact value). Below
// f = 2⁻¹²⁶ the f32 coefficients are subnormal or 0 (losing the 2u bound, and ∞·0 = NaN), so every
// output is recomputed. The check costs a few lane operations per vector (a quarter of the time
// in cache), so it runs only where a token can overflow: f ≠ 1, an ω below 2⁻⁶⁰ (sin θ may round
// to 0: ∞·0), or a cache row with an entry above 1 in magnitude. Otherwise no coefficient or
// product overflows or vanishes where the reference's does not; only an output within 2u of the ±∞
// rounding threshold may still round the other way.
// A recomputed bf16 or f16 output is rounded once, from fp64 straight to its dtype, as the
// reference rounds (through f32 it could tie to even the other way).
//
// bf16 and f16 activations are promoted to f32 (exact), rotated with the same arithmetic, and the
// result rounded once more, to nearest even, to the output dtype: the f32 value is within 2 ulp_f32
// of the exact one, so the output lands on the reference's grid point or its neighbour, within
// 1 ulp of the output dtype (kernel.h). Highway 1.0.3's bf16 DemoteTo truncates, and its emulated
// f16 conversions (targets without F16C) truncate and turn ±∞ into 65536: this file converts with
// integer lane arithmetic instead, and uses F16C's vcvtps2ph / vcvtph2ps where the target has them.
// A bf16 cache row is widened to f32 (exact).
//
// Tokens are split across threads; every element is computed the same way in every part, so the
// output is bitwise identical for any thread count.
//
// Over 600 lines: Highway compiles this file once per target, and the angle walker, the cache
// path and each layout's and dtype's loop are all per-target code.
#ifndef POSENC_OPTIMIZED_ROPE_SHARED
#define POSENC_OPTIMIZED_ROPE_SHARED
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>

#include "optimized/angles.h"
#include "optimized/costs.h"
#include "optimized/optimized.h"
#include "optimized/thread_pool.h"

namespace posenc::optimized {

// One of q, k: input and output heads of every token (of the plan's dtype), strides in elements.
struct RopeHeads {
  const void* in = nullptr;
  void* out = nullptr;
  int64_t heads = 0;  // 0 when absent
  std::array<int64_t, 3> in_strides{}, out_strides{};
  bool in_place = false;
};

struct RopePlan {
  const RopeCall* call;
  DType dtype;  // of q, k and their outputs
  int64_t half, rotary_dim, head_dim;
  bool interleaved;
  bool native_bf16;      // the CPU converts f32 to bf16 itself (AVX512_BF16)
  float sin_sign;        // −1 for the inverse rotation
  bool chunk_outer;      // rows sit in cache: see Rows
  const Angles* angles;  // on the fly; null when cached
  bool one_token;        // a decode step: runs inline, on the thread that owns *angles
  bool decode;           // one token, q and k contiguous along head_dim, half ≤ kDecodeHalf
  double factor;         // attention factor, on the fly
  bool guarded;          // on the fly, outputs are checked: see the top comment
  float exact_from;      // outputs this large (or NaN) are recomputed when guarded: see ExactPairs
  RopeHeads q, k;
};

// The reference's arithmetic for one element of pair i of a token (reference/rope.cc): the pair's
// double coefficients, a·c − b·s (first) or a·s + b·c in double, rounded once to the output dtype
// (returned widened to f32, exactly, so the caller's conversion keeps it). The coefficients
// are the cache row's, or f·cos θ and ±f·sin θ of θ = p·ω by libm: the reference's bits wherever
// its ω and f have them (none, linear, ntk, dynamic_ntk; the others agree within a few ulp). Slow,
// and called for rare outputs only.
struct ExactPairs {
  const RopePlan* plan;
  int64_t position;
  const float *c, *s;  // the token's coefficients, s signed; read when cached

  float element(int64_t i, float a, float b, bool first) const;
};

// The largest half (rounded up to kAnglePad) of a decode token's coefficients on the stack.
inline constexpr int64_t kDecodeHalf = 256;

// Up to this many bytes of q and k, the rows are taken to sit in cache (a fraction of the L3).
inline constexpr int64_t kCachedBytes = int64_t{8} << 20;

inline int64_t round_up(int64_t n, int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

// Scratch values for one part (uninitialized): on the stack for the usual head sizes, on the heap
// beyond.
template <class T>
class Scratch {
 public:
  explicit Scratch(int64_t count) {
    if (count > kSmall) {
      big_ = hwy::AllocateAligned<T>(count);
      data_ = big_.get();
    }
  }
  T* data() { return data_; }

 private:
  static constexpr int64_t kSmall = 8192 / sizeof(T) * 2;  // 16 KiB
  alignas(64) T small_[kSmall];
  hwy::AlignedFreeUniquePtr<T[]> big_;
  T* data_ = small_;
};

}  // namespace posenc::optimized
#endif  // POSENC_OPTIMIZED_ROPE_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/rope.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// From the walker's double sin/cos of the token, or the memo's (any alignment), into c and s
// (any alignment: scratch, or the memo's f32 vectors).
template <class D>
HWY_INLINE void ComputedCoefficients(D dd, const RopePlan& plan, const double* sin,
                                     const double* cos, float* c, float* s) {
  const hn::Rebind<float, D> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const auto fc = hn::Set(dd, plan.factor), fs = hn::Set(dd, plan.sin_sign * plan.factor);
  for (int64_t i = 0; i < plan.half; i += N) {
    hn::StoreU(DemoteToF32(df, hn::Mul(hn::LoadU(dd, cos + i), fc)), df, c + i);
    hn::StoreU(DemoteToF32(df, hn::Mul(hn::LoadU(dd, sin + i), fs)), df, s + i);
  }
}

// bf16 and f16 lanes convert as every optimized kernel does (math-inl.h), rounding once to
// nearest even; NativeBf16 below adds AVX512_BF16's instructions where the CPU has them.
using lowp::LoadF32;
using lowp::StoreF32;

#if HWY_TARGET == HWY_AVX3_DL
// bf16 elements stored by vcvtneps2bf16, or vcvtne2ps2bf16 for two vectors (AVX512_BF16: nearest
// even, NaN kept quiet, in one instruction). Highway 1.0.3 has no op for it and its AVX3_DL target
// does not enable the extension, so it is inline assembly, run only when the CPU reports it
// (RopePlan::native_bf16).
struct NativeBf16 {
  uint16_t bits;
};
template <class D>
HWY_INLINE hn::VFromD<D> LoadF32(D d, const NativeBf16* p) {
  if constexpr (hn::MaxLanes(D()) == 16) {
    // One vpermw puts element k in the high half of lane k and zeros the low halves (masked):
    // the f32 value, exactly, in one instruction instead of a widening and a shift.
    alignas(64) static constexpr uint16_t kHigh[32] = {0, 0,  0, 1,  0, 2,  0, 3,  0, 4, 0,
                                                       5, 0,  6, 0,  7, 0,  8, 0,  9, 0, 10,
                                                       0, 11, 0, 12, 0, 13, 0, 14, 0, 15};
    const __m512i x =
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return hn::VFromD<D>{_mm512_castsi512_ps(
        _mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, _mm512_load_si512(kHigh), x))};
  }
  return LoadF32(d, reinterpret_cast<const hwy::bfloat16_t*>(p));
}
template <class D>
HWY_INLINE void StoreF32(D d, hn::VFromD<D> v, NativeBf16* p) {
  // The instruction treats subnormal inputs as zero: such vectors (rare; vfpclassps class 0x20)
  // round by emulation.
  if constexpr (hn::MaxLanes(D()) == 16) {
    if (HWY_LIKELY(_mm512_fpclass_ps_mask(v.raw, 0x20) == 0)) {
      __m256i bits;
      asm("vcvtneps2bf16 %1, %0" : "=v"(bits) : "v"(v.raw));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bits);
      return;
    }
  }
  StoreF32(d, v, reinterpret_cast<hwy::bfloat16_t*>(p));
}
// a to pa and b to pb with one vcvtne2ps2bf16 (the pair's 32 elements in one instruction) and one
// subnormal test for both.
template <class D>
HWY_INLINE void StorePairF32(D d, hn::VFromD<D> a, NativeBf16* pa, hn::VFromD<D> b,
                             NativeBf16* pb) {
  if constexpr (hn::MaxLanes(D()) == 16) {
    if (HWY_LIKELY(_kortestz_mask16_u8(_mm512_fpclass_ps_mask(a.raw, 0x20),
                                       _mm512_fpclass_ps_mask(b.raw, 0x20)))) {
      __m512i bits;  // a's elements in the low half, b's in the high half
      asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(bits) : "v"(b.raw), "v"(a.raw));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pa), _mm512_castsi512_si256(bits));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pb), _mm512_extracti64x4_epi64(bits, 1));
      return;
    }
  }
  StoreF32(d, a, reinterpret_cast<hwy::bfloat16_t*>(pa));
  StoreF32(d, b, reinterpret_cast<hwy::bfloat16_t*>(pb));
}
#endif

// Stores a and b, each rounded once to T (see StoreF32).
template <class D, class T>
HWY_INLINE void StorePairF32(D d, hn::VFromD<D> a, T* pa, hn::VFromD<D> b, T* pb) {
  StoreF32(d, a, pa);
  StoreF32(d, b, pb);
}

// Whether |c[i]| > 1 or |s[i]| > 1 (or NaN) for some i < n: the largest magnitude's bits, as
// integers, above 1.0f's. A max chain (MaxMagnitude), not a chain of masks, and one compare at
// the end (AboveOne): this runs on every cached token.
template <class DI, class V>
HWY_INLINE hn::VFromD<DI> MaxMagnitude(DI di, hn::VFromD<DI> top, V c, V s) {
  const auto magnitude = hn::Set(di, 0x7FFFFFFF);
  top = hn::Max(top, hn::And(hn::BitCast(di, c), magnitude));
  return hn::Max(top, hn::And(hn::BitCast(di, s), magnitude));
}
template <class DI>
HWY_INLINE bool AboveOne(DI di, hn::VFromD<DI> top) {
  return !hn::AllFalse(di, hn::Gt(top, hn::Set(di, 0x3F800000)));  // 1.0f
}
// For arrays padded to whole vectors.
template <class D>
HWY_INLINE bool AnyAboveOne(D d, const float* c, const float* s, int64_t n) {
  const hn::RebindToSigned<D> di;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto top = hn::Zero(di);
  for (int64_t i = 0; i < n; i += N)
    top = MaxMagnitude(di, top, hn::LoadU(d, c + i), hn::LoadU(d, s + i));
  return AboveOne(di, top);
}

// c[i], s[i] for i < half, f32, s already signed for the inverse: from the cache row of
// `position` (here), or else from double sin/cos (ComputedCoefficients). Returns whether the
// token takes the guarded rotation (AnyAboveOne of c and s): found while copying when the row is
// whole f32 vectors, a decode step's usual case.
HWY_INLINE bool CachedCoefficients(const RopePlan& plan, int64_t position, float* c, float* s) {
  const hn::ScalableTag<float> d;
  const Tensor &cos = *plan.call->cos, &sin = *plan.call->sin;
  if (cos.dtype == DType::bf16) {
    const auto* cr = cos.as<const hwy::bfloat16_t>() + cos.offset(position);
    const auto* sr = sin.as<const hwy::bfloat16_t>() + sin.offset(position);
    for (int64_t i = 0; i < plan.half; ++i) {
      c[i] = hwy::F32FromBF16(cr[i * cos.strides[1]]);
      s[i] = plan.sin_sign * hwy::F32FromBF16(sr[i * sin.strides[1]]);
    }
    return AnyAboveOne(d, c, s, plan.half);
  }
  const float* cr = cos.as<float>() + cos.offset(position);
  const float* sr = sin.as<float>() + sin.offset(position);
  int64_t i = 0;
  if (cos.strides[1] == 1 && sin.strides[1] == 1) {  // whole vectors inside the row, then the rest
    const hn::RebindToSigned<decltype(d)> di;
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    const auto sign = hn::Set(d, plan.sin_sign);
    auto top = hn::Zero(di);
    for (; i + N <= plan.half; i += N) {
      const auto cv = hn::LoadU(d, cr + i), sv = hn::Mul(sign, hn::LoadU(d, sr + i));  // exact: ±1
      hn::StoreU(cv, d, c + i);
      hn::StoreU(sv, d, s + i);
      top = MaxMagnitude(di, top, cv, sv);
    }
    if (i == plan.half) return AboveOne(di, top);
  }
  for (; i < plan.half; ++i) {
    c[i] = cr[i * cos.strides[1]];
    s[i] = plan.sin_sign * sr[i * sin.strides[1]];  // exact: ±1
  }
  return AnyAboveOne(d, c, s, plan.half);
}

// Whether an output of the pair vector (x, y) may need ExactPairs: |x| + |y| ≥ exact_from or NaN
// whenever a lane of x or y is.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE bool MayBeInexact(D d, V x, V y, V exact_from) {
  return !hn::AllTrue(d, hn::Lt(hn::Add(hn::Abs(x), hn::Abs(y)), exact_from));
}

// Outputs x' = rotated (a, b) of pairs i, i + 1, ... (a' lanes when `first`, else b' lanes), each
// replaced by ExactPairs' value where it is ≥ exact_from or NaN; the same test on every path.
template <class D, class V = hn::VFromD<D>>
HWY_NOINLINE V ExactHalfSplit(D d, const ExactPairs& exact, int64_t i, V a, V b, V x, bool first) {
  HWY_ALIGN float av[hn::MaxLanes(d)], bv[hn::MaxLanes(d)], xv[hn::MaxLanes(d)];
  hn::Store(a, d, av);
  hn::Store(b, d, bv);
  hn::Store(x, d, xv);
  for (size_t l = 0; l < hn::Lanes(d); ++l) {
    if (!(std::fabs(xv[l]) < exact.plan->exact_from)) {
      xv[l] = exact.element(i + static_cast<int64_t>(l), av[l], bv[l], first);
    }
  }
  return hn::Load(d, xv);
}

// One pair vector: a' = a·c − b·s, b' = b·c + a·s, each one FMA over one rounded product.
template <bool kGuarded, class D, class T, class V = hn::VFromD<D>>
HWY_INLINE void RotatePair(D d, const T* a_in, const T* b_in, T* a_out, T* b_out, V c, V s,
                           V exact_from, const ExactPairs& exact, int64_t i) {
  const V a = LoadF32(d, a_in), b = LoadF32(d, b_in);
  V a2 = FusedMulSub(d, a, c, hn::Mul(b, s)), b2 = FusedMulAdd(d, b, c, hn::Mul(a, s));
  if (kGuarded && HWY_UNLIKELY(MayBeInexact(d, a2, b2, exact_from))) {
    a2 = ExactHalfSplit(d, exact, i, a, b, a2, true);
    b2 = ExactHalfSplit(d, exact, i, a, b, b2, false);
  }
  StorePairF32(d, a2, a_out, b2, b_out);
}

// The interleaved vector x' = rotated x = (a0, b0, a1, b1, ...) of pairs j/2, j/2 + 1, ...: as
// ExactHalfSplit.
template <class D, class V = hn::VFromD<D>>
HWY_NOINLINE V ExactInterleaved(D d, const ExactPairs& exact, int64_t j, V x, V x2) {
  HWY_ALIGN float xv[hn::MaxLanes(d)], x2v[hn::MaxLanes(d)];
  hn::Store(x, d, xv);
  hn::Store(x2, d, x2v);
  for (size_t l = 0; l < hn::Lanes(d); ++l) {
    const size_t pair = l & ~size_t{1};
    if (!(std::fabs(x2v[l]) < exact.plan->exact_from)) {
      x2v[l] = exact.element((j + static_cast<int64_t>(l)) / 2, xv[pair], xv[pair + 1], l == pair);
    }
  }
  return hn::Load(d, x2v);
}

// One interleaved vector x = (a0, b0, a1, b1, ...) with c2 = (c0, c0, c1, c1, ...) and
// s2 = (−s0, s0, −s1, s1, ...): x' = fma(x, c2, round(swap(x)·s2)), RotatePair's arithmetic.
// j: the index of x's first element in the row.
template <bool kGuarded, class D, class T, class V = hn::VFromD<D>>
HWY_INLINE void RotateInterleavedVector(D d, const T* in, T* out, V c2, V s2, V exact_from,
                                        const ExactPairs& exact, int64_t j) {
  const V x = LoadF32(d, in);
  V x2 = FusedMulAdd(d, x, c2, hn::Mul(hn::Reverse2(d, x), s2));
  if (kGuarded && HWY_UNLIKELY(MayBeInexact(d, x2, x2, exact_from))) {
    x2 = ExactInterleaved(d, exact, j, x, x2);
  }
  StoreF32(d, x2, out);
}

// Contiguous rows (unit stride along head_dim): `heads` rows at in + h·in_stride, written to
// out + h·out_stride (the same rows in place). A row's last partial chunk goes through whole
// vectors on the stack, so every element gets the same lane arithmetic in either order:
//   chunk_outer: each chunk's coefficient vectors are loaded once and applied to every row (the
//     compiler cannot keep them in registers across rows itself: rows might alias them); fastest
//     while the rows sit in cache;
//   else row by row, streaming through memory in address order, which the hardware prefetcher
//     follows (chunk by chunk it does not: 2.5x slower from DRAM).
// Both orders serve only where a token's coefficient vectors do not fit in registers, or a chunk is
// partial: otherwise they are loaded once and every row streams through (InRegisters).
template <class T>
struct Rows {
  const T* in;
  T* out;
  int64_t heads, in_stride, out_stride;
  bool chunk_outer;
};

// Rotates every row with the K vectors of c and of s (chunks i = k·N, k < K) held in registers
// for all rows: pairs (i, half + i) of c[i], s[i], or interleaved vectors at i of c2[i], s2[i].
// Row by row from memory, each multiply reloads its coefficient (rows might alias c and s), and
// those loads, more than the arithmetic, bound a bf16 or f16 loop.
template <size_t K, bool kGuarded, bool kInterleaved, class D, class T>
HWY_INLINE void RowsInRegisters(D d, const Rows<T>& rows, int64_t half, const float* c,
                                const float* s, const ExactPairs& exact) {
  const size_t N = hn::Lanes(d);
  hn::VFromD<D> cv[K], sv[K];
  for (size_t k = 0; k < K; ++k) {
    cv[k] = hn::LoadU(d, c + k * N);
    sv[k] = hn::LoadU(d, s + k * N);
  }
  const auto exact_from = hn::Set(d, exact.plan->exact_from);
  const T* const in0 = rows.in;  // locals: see RotateHalfSplit
  T* const out0 = rows.out;
  const int64_t heads = rows.heads, in_stride = rows.in_stride, out_stride = rows.out_stride;
  for (int64_t h = 0; h < heads; ++h) {
    const T* in = in0 + h * in_stride;
    T* out = out0 + h * out_stride;
    HWY_UNROLL(8)  // so that cv[k], sv[k] stay in registers
    for (size_t k = 0; k < K; ++k) {
      const int64_t i = static_cast<int64_t>(k * N);
      if constexpr (kInterleaved) {
        RotateInterleavedVector<kGuarded>(d, in + i, out + i, cv[k], sv[k], exact_from, exact, i);
      } else {
        RotatePair<kGuarded>(d, in + i, in + half + i, out + i, out + half + i, cv[k], sv[k],
                             exact_from, exact, i);
      }
    }
  }
}

// clang-14 with ASan (the fuzz build) spends over 25 minutes compiling the unrolled
// RowsInRegisters instantiations for every target, so there every row takes the loop path; the
// release and g++ ASan builds test these.
#ifndef POSENC_ROPE_CLANG_ASAN
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POSENC_ROPE_CLANG_ASAN 1
#endif
#endif
#ifndef POSENC_ROPE_CLANG_ASAN
#define POSENC_ROPE_CLANG_ASAN 0
#endif
#endif

// RowsInRegisters<chunks>, when the target has the registers for that many; false otherwise.
template <bool kGuarded, bool kInterleaved, class D, class T>
HWY_INLINE bool InRegisters(D d, const Rows<T>& rows, int64_t chunks, int64_t half, const float* c,
                            const float* s, const ExactPairs& exact) {
#if HWY_HAVE_SCALABLE || POSENC_ROPE_CLANG_ASAN  // no arrays of sizeless vectors; see below
  return false;
#else
  switch (chunks) {
    case 1:
      return RowsInRegisters<1, kGuarded, kInterleaved>(d, rows, half, c, s, exact), true;
    case 2:
      return RowsInRegisters<2, kGuarded, kInterleaved>(d, rows, half, c, s, exact), true;
    case 4:
      return RowsInRegisters<4, kGuarded, kInterleaved>(d, rows, half, c, s, exact), true;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3  // 32 vector registers
    case 8:
      return RowsInRegisters<8, kGuarded, kInterleaved>(d, rows, half, c, s, exact), true;
#endif
    default:
      return false;
  }
#endif
}

template <bool kGuarded, class D, class T>
HWY_INLINE void RotateHalfSplit(D d, const Rows<T>& rows, int64_t half, const float* c,
                                const float* s, const ExactPairs& exact) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto exact_from = hn::Set(d, exact.plan->exact_from);
  const int64_t full = half / N * N;
  if (full == half && InRegisters<kGuarded, false>(d, rows, half / N, half, c, s, exact)) return;
  // Locals, not rows' fields: stores through out could alias those, forcing reloads.
  const T* const in0 = rows.in;
  T* const out0 = rows.out;
  const int64_t heads = rows.heads, in_stride = rows.in_stride, out_stride = rows.out_stride;
  const auto row_in = [=](int64_t h) { return in0 + h * in_stride; };
  const auto row_out = [=](int64_t h) { return out0 + h * out_stride; };
  if (rows.chunk_outer) {
    for (int64_t i = 0; i < full; i += N) {
      const auto cv = hn::LoadU(d, c + i), sv = hn::LoadU(d, s + i);
      for (int64_t h = 0; h < heads; ++h) {
        const T* in = row_in(h);
        T* out = row_out(h);
        RotatePair<kGuarded>(d, in + i, in + half + i, out + i, out + half + i, cv, sv, exact_from,
                             exact, i);
      }
    }
  } else {
    for (int64_t h = 0; h < heads; ++h) {
      const T* in = row_in(h);
      T* out = row_out(h);
      for (int64_t i = 0; i < full; i += N) {
        RotatePair<kGuarded>(d, in + i, in + half + i, out + i, out + half + i, hn::LoadU(d, c + i),
                             hn::LoadU(d, s + i), exact_from, exact, i);
      }
    }
  }
  if (full == half) return;
  const auto cv = hn::LoadU(d, c + full), sv = hn::LoadU(d, s + full);  // padded arrays
  const size_t rest = sizeof(T) * static_cast<size_t>(half - full);
  for (int64_t h = 0; h < heads; ++h) {
    HWY_ALIGN T a[hn::MaxLanes(d)] = {}, b[hn::MaxLanes(d)] = {};
    std::memcpy(a, row_in(h) + full, rest);
    std::memcpy(b, row_in(h) + half + full, rest);
    RotatePair<kGuarded>(d, a, b, a, b, cv, sv, exact_from, exact, full);
    std::memcpy(row_out(h) + full, a, rest);
    std::memcpy(row_out(h) + half + full, b, rest);
  }
}

template <bool kGuarded, class D, class T>
HWY_INLINE void RotateInterleaved(D d, const Rows<T>& rows, int64_t rotary_dim, const float* c2,
                                  const float* s2, const ExactPairs& exact) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const float exact_from = exact.plan->exact_from;
  if constexpr (hn::MaxLanes(D()) >= 2) {
    const int64_t full = rotary_dim / N * N;
    const T* const in0 = rows.in;  // locals: see RotateHalfSplit
    T* const out0 = rows.out;
    const int64_t heads = rows.heads, in_stride = rows.in_stride, out_stride = rows.out_stride;
    const auto limit = hn::Set(d, exact_from);
    if (full == rotary_dim &&
        InRegisters<kGuarded, true>(d, rows, rotary_dim / N, rotary_dim / 2, c2, s2, exact)) {
      return;
    }
    const auto rotate = [=, &exact](int64_t h, int64_t j, hn::VFromD<D> cv, hn::VFromD<D> sv) {
      RotateInterleavedVector<kGuarded>(d, in0 + h * in_stride + j, out0 + h * out_stride + j, cv,
                                        sv, limit, exact, j);
    };
    if (rows.chunk_outer) {
      for (int64_t j = 0; j < full; j += N) {
        const auto cv = hn::LoadU(d, c2 + j), sv = hn::LoadU(d, s2 + j);
        for (int64_t h = 0; h < heads; ++h) rotate(h, j, cv, sv);
      }
    } else {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t j = 0; j < full; j += N)
          rotate(h, j, hn::LoadU(d, c2 + j), hn::LoadU(d, s2 + j));
      }
    }
    if (full == rotary_dim) return;
    const auto cv = hn::LoadU(d, c2 + full), sv = hn::LoadU(d, s2 + full);
    const size_t rest = sizeof(T) * static_cast<size_t>(rotary_dim - full);
    for (int64_t h = 0; h < heads; ++h) {
      HWY_ALIGN T x[hn::MaxLanes(d)] = {};
      std::memcpy(x, in0 + h * in_stride + full, rest);
      RotateInterleavedVector<kGuarded>(d, x, x, cv, sv, limit, exact, full);
      std::memcpy(out0 + h * out_stride + full, x, rest);
    }
  } else {  // one lane (HWY_SCALAR): swap by hand
    for (int64_t h = 0; h < rows.heads; ++h) {
      const T* in = rows.in + h * rows.in_stride;
      T* out = rows.out + h * rows.out_stride;
      for (int64_t j = 0; j < rotary_dim; j += 2) {
        const auto a = LoadF32(d, in + j), b = LoadF32(d, in + j + 1);
        auto a2 = FusedMulAdd(d, a, hn::Set(d, c2[j]), hn::Mul(b, hn::Set(d, s2[j])));
        auto b2 = FusedMulAdd(d, b, hn::Set(d, c2[j + 1]), hn::Mul(a, hn::Set(d, s2[j + 1])));
        if (kGuarded && !(std::fabs(hn::GetLane(a2)) < exact_from)) {
          a2 = hn::Set(d, exact.element(j / 2, hn::GetLane(a), hn::GetLane(b), true));
        }
        if (kGuarded && !(std::fabs(hn::GetLane(b2)) < exact_from)) {
          b2 = hn::Set(d, exact.element(j / 2, hn::GetLane(a), hn::GetLane(b), false));
        }
        StoreF32(d, a2, out + j);
        StoreF32(d, b2, out + j + 1);
      }
    }
  }
  (void)N;
}

// A token's coefficients: c, s for the half-split layout (padded with defined lanes), c2, s2 for
// the interleaved one (InterleavedCoefficients); `guarded` selects the checked rotation.
struct TokenCoefficients {
  const float *c, *s, *c2, *s2;
  bool guarded;
};

// c2 = (c0, c0, c1, c1, ...), s2 = (−s0, s0, −s1, s1, ...) from c and s (padded arrays).
template <class D>
HWY_INLINE void InterleavedCoefficients(D d, int64_t half, const float* c, const float* s,
                                        float* c2, float* s2) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < half; i += N) {
    const auto cv = hn::LoadU(d, c + i), sv = hn::LoadU(d, s + i);
    hn::StoreInterleaved2(cv, cv, d, c2 + 2 * i);
    hn::StoreInterleaved2(hn::Neg(sv), sv, d, s2 + 2 * i);
  }
}

// Rotates token t's heads of x (q or k). `row` holds one strided row's rotary dims; unused when x
// is contiguous along head_dim. Out of line: RopeTokensOf and DecodeToken share one copy.
template <class T>
HWY_NOINLINE void RotateHeads(const RopePlan& plan, const RopeHeads& x, int64_t t,
                              const TokenCoefficients& k, const ExactPairs& exact, T* row) {
  const hn::ScalableTag<float> d;
  const int64_t rot = plan.rotary_dim;
  const auto rotate = [&](const Rows<T>& rows) {
    if (plan.interleaved) {
      k.guarded ? RotateInterleaved<true>(d, rows, rot, k.c2, k.s2, exact)
                : RotateInterleaved<false>(d, rows, rot, k.c2, k.s2, exact);
    } else {
      k.guarded ? RotateHalfSplit<true>(d, rows, plan.half, k.c, k.s, exact)
                : RotateHalfSplit<false>(d, rows, plan.half, k.c, k.s, exact);
    }
  };
  const T* in = static_cast<const T*>(x.in) + t * x.in_strides[0];
  T* out = static_cast<T*>(x.out) + t * x.out_strides[0];
  const int64_t is = x.in_strides[2], os = x.out_strides[2];
  if (is == 1 && os == 1) {
    rotate({in, out, x.heads, x.in_strides[1], x.out_strides[1], plan.chunk_outer});
    if (x.in_place || rot == plan.head_dim) return;
    for (int64_t h = 0; h < x.heads; ++h) {  // bit-exact pass-through
      std::memcpy(out + h * x.out_strides[1] + rot, in + h * x.in_strides[1] + rot,
                  sizeof(T) * (plan.head_dim - rot));
    }
    return;
  }
  for (int64_t h = 0; h < x.heads; ++h) {
    const T* in_row = in + h * x.in_strides[1];
    T* out_row = out + h * x.out_strides[1];
    for (int64_t j = 0; j < rot; ++j) row[j] = in_row[j * is];
    rotate({row, row, 1, 0, 0, false});
    for (int64_t j = 0; j < rot; ++j) out_row[j * os] = row[j];
    if (x.in_place) continue;
    for (int64_t j = rot; j < plan.head_dim; ++j) {  // bit-exact pass-through
      std::memcpy(out_row + j * os, in_row + j * is, sizeof(T));
    }
  }
}

template <class T>
HWY_NOINLINE void RopeTokensOf(const RopePlan& plan, int64_t begin, int64_t end) {
  const hn::ScalableTag<float> d;
  const int64_t padded = round_up(plan.half, kAnglePad), rot = plan.rotary_dim;
  Scratch<float> scratch(6 * padded);
  float* c = scratch.data();    // [padded]
  float* s = c + padded;        // [padded]
  float* c2 = s + padded;       // [2·padded], interleaved layout
  float* s2 = c2 + 2 * padded;  // [2·padded]
  Scratch<T> row_scratch(round_up(rot, kAnglePad));
  T* row = row_scratch.data();  // one strided row's rotary dims, gathered
  // Lanes past half feed only discarded tail lanes, but must hold defined values (the first half
  // lanes of c and s are written per token).
  std::fill(c + plan.half, c + padded, 0.0f);
  std::fill(s + plan.half, s + padded, 0.0f);
  ExactPairs exact{&plan, 0, c, s};  // position set per token
  // k.c, k.s: the scratch or the memo's; k.guarded set per token when cached.
  TokenCoefficients k{c, s, c2, s2, plan.guarded};
  const Tensor& positions = plan.call->positions;
  const auto position = [&](int64_t t) { return load_index(positions, positions.offset(t)); };
  const hn::ScalableTag<double> dd;
  Scratch<double> walker_scratch(plan.angles ? 4 * plan.angles->padded() : 0);
  std::optional<AngleWalker<decltype(dd)>> walker;
  if (plan.angles) walker.emplace(dd, *plan.angles, walker_scratch.data());
  for (int64_t t = begin; t < end; ++t) {
    exact.position = position(t);
    if (walker && plan.one_token) {  // the walker's fresh values, memoized (angles.h)
      const Angles& angles = *plan.angles;
      if (angles.fresh_position != exact.position) {
        walker->At(t, position);
        angles.fresh_sin.assign(walker->sin(), walker->sin() + angles.padded());
        angles.fresh_cos.assign(walker->cos(), walker->cos() + angles.padded());
        angles.fresh_position = exact.position;
        angles.fresh_sign = 0;
      }
      if (angles.fresh_sign != plan.sin_sign) {
        angles.fresh_c.assign(padded, 0.0f);  // lanes past half: defined, see above
        angles.fresh_s.assign(padded, 0.0f);
        ComputedCoefficients(dd, plan, angles.fresh_sin.data(), angles.fresh_cos.data(),
                             angles.fresh_c.data(), angles.fresh_s.data());
        angles.fresh_sign = plan.sin_sign;
      }
      k.c = angles.fresh_c.data(), k.s = angles.fresh_s.data();
    } else if (walker) {
      walker->At(t, position);
      ComputedCoefficients(dd, plan, walker->sin(), walker->cos(), c, s);
    } else {
      k.guarded = CachedCoefficients(plan, exact.position, c, s);
    }
    if (plan.interleaved) InterleavedCoefficients(d, plan.half, k.c, k.s, c2, s2);
    if (plan.q.heads) RotateHeads(plan, plan.q, t, k, exact, row);
    if (plan.k.heads) RotateHeads(plan, plan.k, t, k, exact, row);
  }
}

// A decode token (RopePlan::decode) without RopeTokensOf's set-up, which was a third of a
// [1, 8, 64] step: the coefficients are the memo's for this position, or the cache row's, and
// every output the same as RopeTokensOf's. False, having written nothing, when the memo holds
// another position or sign: RopeTokensOf then computes and keeps them.
template <class T>
HWY_INLINE bool DecodeToken(const RopePlan& plan) {
  const hn::ScalableTag<float> d;
  const Tensor& positions = plan.call->positions;  // read here: load_index is out of line
  const int64_t position =
      positions.dtype == DType::i64 ? *positions.as<int64_t>() : *positions.as<int32_t>();
  HWY_ALIGN float c[kDecodeHalf], s[kDecodeHalf], c2[2 * kDecodeHalf], s2[2 * kDecodeHalf];
  TokenCoefficients k{c, s, c2, s2, plan.guarded};
  if (plan.angles) {
    const Angles& angles = *plan.angles;
    if (angles.fresh_position != position || angles.fresh_sign != plan.sin_sign) return false;
    k.c = angles.fresh_c.data(), k.s = angles.fresh_s.data();
  } else {
    const int64_t padded = round_up(plan.half, kAnglePad);
    std::fill(c + plan.half, c + padded, 0.0f);  // defined lanes past half, as RopeTokensOf's
    std::fill(s + plan.half, s + padded, 0.0f);
    k.guarded = CachedCoefficients(plan, position, c, s);
  }
  if (plan.interleaved) InterleavedCoefficients(d, plan.half, k.c, k.s, c2, s2);
  const ExactPairs exact{&plan, position, c, s};
  if (plan.q.heads) RotateHeads<T>(plan, plan.q, 0, k, exact, nullptr);
  if (plan.k.heads) RotateHeads<T>(plan, plan.k, 0, k, exact, nullptr);
  return true;
}

template <class T>
void RopeOf(const RopePlan& plan, int64_t begin, int64_t end) {
  if (plan.decode && DecodeToken<T>(plan)) return;
  RopeTokensOf<T>(plan, begin, end);
}

void RopeTokens(const RopePlan& plan, int64_t begin, int64_t end) {
  switch (plan.dtype) {
    case DType::bf16:
#if HWY_TARGET == HWY_AVX3_DL
      if (plan.native_bf16) return RopeOf<NativeBf16>(plan, begin, end);
#endif
      return RopeOf<hwy::bfloat16_t>(plan, begin, end);
    case DType::f16:
      return RopeOf<hwy::float16_t>(plan, begin, end);
    default:
      return RopeOf<float>(plan, begin, end);
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using RopeTokensFn = decltype(HWY_STATIC_DISPATCH(RopeTokens));

float ExactPairs::element(int64_t i, float a, float b, bool first) const {
  double cs = c[i], sn = s[i];
  if (plan->angles) {
    const double omega = plan->angles->hi[i] + plan->angles->lo[i];  // exact
    const double angle = static_cast<double>(position) * omega;
    cs = plan->factor * std::cos(angle);
    sn = plan->sin_sign * plan->factor * std::sin(angle);
  }
  const double x = a, y = b;
  // Rounded once to the output dtype (store), then widened exactly: the caller's rounding to that
  // dtype keeps it. Through f32 first, a bf16 or f16 value could tie to even the other way.
  alignas(4) unsigned char rounded[4];
  const Tensor out = view(rounded, plan->dtype, {1});
  store(out, 0, first ? x * cs - y * sn : x * sn + y * cs);
  return static_cast<float>(load(out, 0));
}

namespace {

// Whether this CPU has AVX512_BF16 (asked once).
bool cpu_has_avx512_bf16() {
#if HWY_ARCH_X86 && (HWY_COMPILER_GCC || HWY_COMPILER_CLANG)
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

RopeHeads heads_of(const Tensor& in, const Tensor& out) {
  return {.in = in.data,
          .out = out.data,
          .heads = in.shape[1],
          .in_strides = {in.strides[0], in.strides[1], in.strides[2]},
          .out_strides = {out.strides[0], out.strides[1], out.strides[2]},
          .in_place = same_view(in, out)};
}

// rope's compiled targets, best first.
const TargetTable<RopeTokensFn>& rope_targets() {
  static const TargetTable<RopeTokensFn> table = POSENC_TARGET_TABLE(RopeTokens);
  return table;
}

// The plan of a validated call with at least one token, and its part count. `angles` are the
// frequencies of an uncached call (rope_angles), else ignored.
int plan_rope(const RopeCall& call, const Angles* angles, RopePlan& plan) {
  const int64_t tokens = call.q.shape[0], head_dim = call.q.shape[2];
  // Field by field: an aggregate initializer zeroes the whole struct first with `rep stos`, whose
  // start-up was ~8% of a [1, 8, 64] decode step.
  plan.call = &call;
  plan.dtype = call.q.dtype;
  plan.half = call.rotary_dim / 2;
  plan.rotary_dim = call.rotary_dim;
  plan.head_dim = head_dim;
  plan.interleaved = call.layout == RopeLayout::interleaved;
  plan.native_bf16 = cpu_has_avx512_bf16();
  plan.sin_sign = call.inverse ? -1.0f : 1.0f;
  plan.chunk_outer = false;
  plan.angles = nullptr;
  plan.one_token = tokens == 1;
  plan.factor = 1;
  plan.guarded = true;
  plan.exact_from = 0x1p127f;
  plan.q = heads_of(call.q, call.q_out);
  if (call.k) plan.k = heads_of(*call.k, *call.k_out);
  const auto contiguous = [](const RopeHeads& x) {
    return x.heads == 0 || (x.in_strides[2] == 1 && x.out_strides[2] == 1);
  };
  plan.decode = tokens == 1 && contiguous(plan.q) && contiguous(plan.k) &&
                round_up(plan.half, kAnglePad) <= kDecodeHalf;
  const int parts = plan_parts(
      call.threads, tokens, rope_nanos_per_token(plan.q.heads + plan.k.heads, head_dim, plan.half));
  const int64_t bytes = tokens * (plan.q.heads + plan.k.heads) * head_dim *
                        static_cast<int64_t>(dtype_size(plan.dtype));
  plan.chunk_outer = bytes <= kCachedBytes;
  if (!call.cached()) {
    plan.angles = angles;
    plan.factor = angles->attention_factor;
    if (plan.factor < 0x1p-126) plan.exact_from = 0;        // every output: see the top comment
    plan.guarded = plan.factor != 1 || angles->tiny_omega;  // computed once per memo
  }
  return parts;
}

// rope_step's state: a copy of the call (the plan points into it).
struct RopeStepState {
  RopeCall call;
  RopePlan plan;
  int parts = 1;
  int64_t max_position;
  RopeTokensFn* tokens_fn;
  AnglesTicket ticket;

  // `validated` has passed validate().
  RopeStepState(const RopeCall& validated, RopeTokensFn* fn)
      : call(validated), max_position(call.max_position()), tokens_fn(fn) {
    if (call.q.shape[0] > 0) {
      parts = plan_rope(
          call, call.cached() ? nullptr : &rope_angles(call.rotary_dim, call.base, call.scaling),
          plan);
    }
  }
  RopeStepState(const RopeStepState&) = delete;  // the plan points into this call
  RopeStepState& operator=(const RopeStepState&) = delete;

  // The positions' values, the one precondition that reads data: a decode step has one, so a
  // compare each; check_positions raises the Error (and finds its index) on failure.
  template <class Index>
  bool positions_in_range() const {
    const Tensor& p = call.positions;
    const Index* values = p.as<Index>();
    for (int64_t t = 0; t < p.shape[0]; ++t) {
      const int64_t v = values[t * p.strides[0]];
      if (v < 0 || v > max_position) return false;
    }
    return true;
  }
  void check_step_positions() const {
    const bool ok = call.positions.dtype == DType::i64 ? positions_in_range<int64_t>()
                                                       : positions_in_range<int32_t>();
    if (!ok) check_positions(call.positions, "positions", 0, max_position);
  }

  void operator()() {
    check_step_positions();
    if (call.q.shape[0] == 0) return;
    // This thread's memo, as run_rope reads it: the layers of a model, each with its own step,
    // share one position's fresh sin and cos (angles.h); a copy per step would recompute them.
    if (!call.cached()) {
      plan.angles = &rope_angles(call.rotary_dim, call.base, call.scaling, ticket);
    }
    parallel_for(call.q.shape[0], parts, [&](Range r) { tokens_fn(plan, r.begin, r.end); });
  }
};

// Nonzero unless views x (kept) and y have the same address, dtype, and rank `Rank`, the one
// validate() requires of this view, with the same sizes and strides. Branch-free, at the ranks
// validate() fixes: a branch per field and rank made run()'s check half again as slow (RESULTS).
template <int Rank>
uint64_t view_diff(const Tensor& x, const Tensor& y) {
  uint64_t diff = (reinterpret_cast<uintptr_t>(x.data) ^ reinterpret_cast<uintptr_t>(y.data)) |
                  static_cast<uint64_t>(x.dtype != y.dtype) |
                  static_cast<uint64_t>(x.rank != Rank) | static_cast<uint64_t>(y.rank != Rank);
  for (int d = 0; d < Rank; ++d)
    diff |= static_cast<uint64_t>((x.shape[d] ^ y.shape[d]) | (x.strides[d] ^ y.strides[d]));
  return diff;
}
template <int Rank>
uint64_t view_diff(const std::optional<Tensor>& x, const std::optional<Tensor>& y) {
  if (x.has_value() != y.has_value()) return 1;
  return x ? view_diff<Rank>(*x, *y) : 0;
}

// Whether `call` has the same views (addresses, dtypes, shapes, strides) as `kept`, a call that
// passed validate(), and the same parameters bit for bit, those validate() and the kernel read:
// then validate() gives both the same verdict, bar the positions' values. A cached call reads
// neither base nor scaling. A view of another rank than validate() requires differs.
bool same_structure(const RopeCall& kept, const RopeCall& call) {
  static_assert(sizeof(RopeCall) == 784, "a field was added to RopeCall: compare it here");
  const RopeCall &a = kept, &b = call;
  const uint64_t views = view_diff<3>(a.q, b.q) | view_diff<3>(a.q_out, b.q_out) |
                         view_diff<1>(a.positions, b.positions) | view_diff<3>(a.k, b.k) |
                         view_diff<3>(a.k_out, b.k_out) | view_diff<2>(a.cos, b.cos) |
                         view_diff<2>(a.sin, b.sin);
  const uint64_t parameters = static_cast<uint64_t>(a.rotary_dim ^ b.rotary_dim) |
                              static_cast<uint64_t>(a.layout != b.layout) |
                              static_cast<uint64_t>(a.inverse != b.inverse) |
                              static_cast<uint64_t>(a.threads ^ b.threads);
  if ((views | parameters) != 0) return false;
  return a.cached() || (std::bit_cast<uint64_t>(a.base) == std::bit_cast<uint64_t>(b.base) &&
                        same_scaling(a.scaling, b.scaling));
}

// Calls of other than one token: validated and planned each time (their part count reads the
// pool's state). Out of line, as keep_decode_call: the repeated decode call then sets up no frame
// for them.
[[gnu::noinline]] void run_tokens(const RopeCall& call, RopeTokensFn* tokens_fn) {
  call.validate();
  if (call.q.shape[0] == 0) return;  // nothing to rotate, and rotary_dim may be any size
  RopePlan plan;
  const int parts = plan_rope(
      call, call.cached() ? nullptr : &rope_angles(call.rotary_dim, call.base, call.scaling), plan);
  parallel_for(call.q.shape[0], parts, [&](Range r) { tokens_fn(plan, r.begin, r.end); });
}

thread_local std::optional<RopeStepState> t_decode_call;

[[gnu::noinline]] void keep_decode_call(const RopeCall& call, RopeTokensFn* tokens_fn) {
  t_decode_call.reset();
  call.validate();
  t_decode_call.emplace(call, tokens_fn);
}

// A one-token call, run() in a decode loop (each layer's step, over the same buffers): this
// thread keeps the last one it validated and planned, as a RopeStep, and a call with the same
// structure checks only its positions' values. Validating and planning were half of a [1, 8, 64]
// call (bench/RESULTS.md).
void run_rope(const RopeCall& call, RopeTokensFn* tokens_fn) {
  if (call.q.shape[0] != 1) return run_tokens(call, tokens_fn);
  std::optional<RopeStepState>& last = t_decode_call;
  if (!last || last->tokens_fn != tokens_fn || !same_structure(last->call, call)) {
    keep_decode_call(call, tokens_fn);
  }
  (*last)();
}

}  // namespace

// Coefficients c = f·cos θ, s = ±f·sin θ rounded once to f32 (exact angles, double sin/cos, or the
// cache row), then each output is one FMA over one rounded product: within 1.5 ulp_f32(f·‖pair‖)
// of the exact value before its final rounding, so within 2 of the reference's rounded result.
// Bound 2 (proof in rope.cc). The pass-through tail is copied bit for bit. f32 throughout: a
// product of an input and a coefficient past FLT_MAX overflows (inputs near FLT_MAX with f > 1).
// bf16 and f16 activations (f32 or bf16 caches): promoted, the same f32 arithmetic, rounded once
// more to the output: within 1 ulp of the output dtype (kernel.h).
std::vector<Impl<RopeCall>> rope() {
  constexpr uint64_t kVariants =
      variant::f32 | variant::bf16 | variant::f16 | variant::strided | variant::in_place |
      variant::rope_half_split | variant::rope_interleaved | variant::rope_partial |
      variant::rope_inverse | variant::rope_cached | variant::rope_key | variant::all_scalings;
  return target_impls<RopeCall>("rope", kVariants, /*bound=*/2, /*threaded=*/true, rope_targets(),
                                run_rope);
}

std::function<void()> rope_step(const RopeCall& call) {
  call.validate();
  auto state = std::make_shared<RopeStepState>(call, rope_targets().best());
  return [state] { (*state)(); };
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
