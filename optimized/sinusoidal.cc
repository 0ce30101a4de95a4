// sinusoidal: out[t, 2i] = x[t, 2i] + sin(p·ω_i), out[t, 2i+1] = x[t, 2i+1] + cos(p·ω_i).
// Exact angles and double sin/cos for every i (vectorized over i; consecutive positions step by
// one rotation, as AngleWalker), then x added in double and each element rounded once to out's
// dtype: f32 by DemoteTo, bf16/f16 through f32 rounded to odd on AVX-512 (lowp), else
// from the double's bits (Bits16FromF64; math-inl.h's lowp for zeros, subnormals and non-finite
// lanes), with x widened to f32 first (exact); strided rows use
// the contract's load() and store(). Outputs past 16 MiB are written with non-temporal stores.
#ifndef POSENC_OPTIMIZED_SINUSOIDAL_SHARED
#define POSENC_OPTIMIZED_SINUSOIDAL_SHARED
#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>

#include <algorithm>
#include <cstdint>

#include "optimized/angles.h"
#include "optimized/optimized.h"
#include "optimized/reusable.h"
#include "optimized/thread_pool.h"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/sinusoidal.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Angles per column block of a table: a chain of up to kAnchorEvery rows runs block by block, its
// sin/cos state (2·kBlock doubles) staying in L1 instead of a whole row's (32 KiB at width 4096)
// going through L2. A multiple of kAnglePad, so every block is whole vectors. An add runs whole
// rows instead: reading x from kAnchorEvery rows at once is more streams than the prefetchers
// follow (measured: 0.6× at t = 4096, width 4096).
constexpr int64_t kBlock = 512;

// Whether to write rows with non-temporal stores: x86 AVX2 and up (Stream is a plain store
// elsewhere), and an output past what a last-level cache could keep (16 MiB, as
// bias_lines-inl.h's stream_bias): a normal store first reads the line it overwrites.
bool StreamRows(const Tensor& out) {
  return HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && out.strides[1] == 1 &&
         out.numel() * static_cast<int64_t>(dtype_size(out.dtype)) > (int64_t{16} << 20);
}

#undef POSENC_SINUSOIDAL_AVX512
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define POSENC_SINUSOIDAL_AVX512 1
// 8 f32 lanes each of a and b as a0 b0 a1 b1 ...: one two-source permute (vpermt2ps, which
// Highway 1.0.3 does not offer) in place of Combine and a one-source permute; an f32 table is
// bound by port 5 on Intel, which runs both.
HWY_INLINE hn::Vec512<float> Interleave8(__m256 a, __m256 b) {
  const __m512i from = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  return hn::Vec512<float>{
      _mm512_permutex2var_ps(_mm512_castps256_ps512(a), from, _mm512_castps256_ps512(b))};
}

#else
#define POSENC_SINUSOIDAL_AVX512 0
#endif

// v at p, non-temporal when `stream` and p is aligned to the whole vector (Stream requires it).
template <class D>
HWY_INLINE void StoreRowVector(hn::VFromD<D> v, D d, hn::TFromD<D>* p, bool stream) {
  if (stream && reinterpret_cast<uintptr_t>(p) % (hn::Lanes(d) * sizeof(hn::TFromD<D>)) == 0) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

// Stores sin lanes a and cos lanes b interleaved, a0 b0 a1 b1 ..., at o (2·Lanes elements, f32
// lanes) in one store, non-temporal when `stream` and o is aligned.
template <class V, class L>
HWY_INLINE void StorePairs(V a, V b, L* o, bool stream) {
  using D = hn::DFromV<V>;
#if HWY_TARGET == HWY_SCALAR  // one lane: no wider lane to pair into
  (void)stream;
  hn::StoreInterleaved2(a, b, D(), reinterpret_cast<hn::TFromD<D>*>(o));
#elif POSENC_SINUSOIDAL_AVX512
  static_assert(sizeof(a.raw) == 32 && std::is_same_v<hn::TFromV<V>, float>);
  const auto pairs = Interleave8(a.raw, b.raw);
  const hn::Full512<L> dl;
  StoreRowVector(hn::BitCast(dl, pairs), dl, o, stream);
#else
  // a and b side by side in one vector twice as wide, then one lane permutation: lane 2k takes
  // a's lane k, lane 2k + 1 b's. Two shuffles; widening each pair into one 64-bit lane took two
  // widenings, a shift and an or, and a sinusoidal table is bound by these shuffles.
  const hn::Twice<D> d2;
  const hn::RebindToSigned<decltype(d2)> di2;
  const auto lane = hn::Iota(di2, 0);
  const auto from = hn::Add(hn::ShiftRight<1>(lane),
                            hn::And(hn::Set(di2, static_cast<int32_t>(hn::Lanes(D()))),
                                    hn::VecFromMask(di2, hn::TestBit(lane, hn::Set(di2, 1)))));
  const auto pairs = hn::TableLookupLanes(hn::Combine(d2, b, a), hn::IndicesFromVec(d2, from));
  const hn::Repartition<L, decltype(d2)> dl;
  StoreRowVector(hn::BitCast(dl, pairs), dl, o, stream);
#endif
}

#if HWY_TARGET != HWY_SCALAR  // (SCALAR rounds lane by lane)
// x rounded once to T (bf16 or f16), to nearest even, from its double bits: the magnitude's
// dropped mantissa bits (45 for bf16's 7 kept, 42 for f16's 10) rounded into the kept ones (a
// carry moves into the exponent, up to ∞ just past the largest finite), then the exponent rebiased
// (1023 to 127 or 15). Exact for lanes whose |x| is normal in T and below 2^(emax + 1), and for
// ±0 (a table's position 0 has sin = 0 in every column); `fast` says which. The 16 bits come back
// in the low bits of u64 lanes.
template <class T, class D, class V = hn::VFromD<D>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<D>> Bits16FromF64(D d, V x, hn::Mask<D>& fast) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  constexpr bool kBf16 = std::is_same_v<T, hwy::bfloat16_t>;
  constexpr int kDrop = kBf16 ? 45 : 42, kMantissa = 52 - kDrop;
  constexpr uint64_t kRebias = uint64_t{kBf16 ? 1023 - 127 : 1023 - 15} << kMantissa;
  constexpr uint64_t kLeast = kBf16 ? 0x3810000000000000 : 0x3F10000000000000;  // 2^-126, 2^-14
  constexpr uint64_t kPast = kBf16 ? 0x47F0000000000000 : 0x40F0000000000000;   // 2^128, 2^16
  const auto u = hn::BitCast(du, x);
  const auto a = hn::And(u, hn::Set(du, 0x7FFFFFFFFFFFFFFF));
  const auto ai = hn::BitCast(di, a);
  const auto zero = hn::Eq(ai, hn::Zero(di));
  fast = hn::RebindMask(
      d, hn::Or(zero, hn::And(hn::Gt(ai, hn::Set(di, static_cast<int64_t>(kLeast) - 1)),
                              hn::Lt(ai, hn::Set(di, static_cast<int64_t>(kPast))))));
  const auto odd = hn::And(hn::ShiftRight<kDrop>(a), hn::Set(du, 1));
  const auto rounded = hn::ShiftRight<kDrop>(
      hn::Add(a, hn::Add(hn::Set(du, (uint64_t{1} << (kDrop - 1)) - 1), odd)));
  const auto magnitude =
      hn::IfThenZeroElse(hn::RebindMask(du, zero), hn::Sub(rounded, hn::Set(du, kRebias)));
  return hn::Or(magnitude, hn::ShiftLeft<15>(hn::ShiftRight<63>(u)));
}

#endif

// Pairs [j, j + Lanes(dd)) of an f32 row at unit stride, o and x (if given) at element 2j: sin
// lanes sv and cos lanes cv plus x, added in double and rounded once.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE void EmitF32(D dd, V sv, V cv, const float* x, float* o, bool stream) {
  const hn::Rebind<float, D> df;  // as many f32 lanes as double lanes
  if (x) {
    hn::Vec<decltype(df)> x_sin, x_cos;
    hn::LoadInterleaved2(df, x, x_sin, x_cos);
    sv = hn::Add(hn::PromoteTo(dd, x_sin), sv);
    cv = hn::Add(hn::PromoteTo(dd, x_cos), cv);
  }
  StorePairs(DemoteToF32(df, sv), DemoteToF32(df, cv), o, stream);
}

// One row's angles [i0, i0 + n) of sin/cos state s, c (double, n a multiple of the lane count)
// added to x (if any) and rounded once to out's dtype; angles past `half` are padding.
template <class T>
HWY_INLINE void EmitBlock(const SinusoidalCall& call, int64_t t, int64_t half, int64_t i0,
                          int64_t n, const double* s, const double* c, float* xf, bool stream) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many f32 lanes as double lanes
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const Tensor& out = call.out;
  const int64_t os = out.strides[1], xs = call.x ? call.x->strides[1] : 0;
  const int64_t stop = std::min(i0 + n, half);  // angles of this block in the row
  if constexpr (sizeof(T) == 4) {
    // Highway 1.0.3's scalar DemoteTo(double → float) saturates ±∞ to ±FLT_MAX
    // (hwy/ops/scalar-inl.h), so x = −∞ would come out finite: the scalar target takes the
    // RoundToF32 loop below, which rounds the same double sum once and keeps ∞.
    const bool unit_stride = os == 1 && (!call.x || xs == 1) && HWY_TARGET != HWY_SCALAR;
    float* o = out.as<float>() + out.offset(t);
    const float* x = call.x ? call.x->as<float>() + call.x->offset(t) : nullptr;
    int64_t j = i0;
    if (unit_stride) {
      for (; j + N <= stop; j += N) {
        EmitF32(dd, hn::Load(dd, s + (j - i0)), hn::Load(dd, c + (j - i0)), x ? x + 2 * j : nullptr,
                o + 2 * j, stream);
      }
    }
    for (; j < stop; ++j) {  // tails and strided rows: the same double add, rounded once
      const double sj = s[j - i0], cj = c[j - i0];
      o[2 * j * os] = RoundToF32(x ? static_cast<double>(x[2 * j * xs]) + sj : sj);
      o[(2 * j + 1) * os] = RoundToF32(x ? static_cast<double>(x[(2 * j + 1) * xs]) + cj : cj);
    }
  } else {
    // bf16 and f16: vectorized on every target. x is widened to f32 first (exact) into xf; the
    // double sum is rounded once to T: on AVX-512 through f32 rounded to odd, elsewhere from its
    // bits (Bits16FromF64), or where that does not apply
    // (zero, subnormal in T, huge, ∞, NaN; every lane on SCALAR) by math-inl.h's lowp::RoundF64,
    // as the contract's store() rounds the tails and strided rows: all three round once.
    int64_t j = i0;
    if (os == 1 && (!call.x || xs == 1)) {
      const hn::ScalableTag<float> d;
      const int64_t F = static_cast<int64_t>(hn::Lanes(d));
      const int64_t vector_stop = i0 + (stop - i0) / N * N;
      if (call.x) {
        const T* xr = call.x->as<T>() + call.x->offset(t);
        int64_t k = 2 * i0;
        for (; k + F <= 2 * vector_stop; k += F)
          hn::Store(lowp::LoadF32(d, xr + k), d, xf + (k - 2 * i0));
        for (; k < 2 * vector_stop; ++k)
          xf[k - 2 * i0] = static_cast<float>(load(*call.x, call.x->offset(t, k)));
      }
      uint16_t* o = reinterpret_cast<uint16_t*>(out.as<T>() + out.offset(t));
      for (; j < vector_stop; j += N) {
        auto sv = hn::Load(dd, s + (j - i0)), cv = hn::Load(dd, c + (j - i0));
        if (call.x) {
          hn::Vec<decltype(df)> x_sin, x_cos;
          hn::LoadInterleaved2(df, xf + 2 * (j - i0), x_sin, x_cos);
          sv = hn::Add(hn::PromoteTo(dd, x_sin), sv);
          cv = hn::Add(hn::PromoteTo(dd, x_cos), cv);
        }
#if POSENC_SINUSOIDAL_AVX512
        // Each sum rounded to f32 to odd, then to T to nearest even: rounded once (lowp), every
        // lane, zeros, subnormals, ∞ and NaN included; a third of the operations of the bits below.
        const hn::Full512<float> d16;
        const auto bits =
            lowp::Bits16<T>(d16, Interleave8(lowp::DemoteToF32RoundToOdd(df, sv).raw,
                                             lowp::DemoteToF32RoundToOdd(df, cv).raw));
        StoreRowVector(bits, hn::Rebind<uint16_t, decltype(d16)>(), o + 2 * j, stream);
#else
#if HWY_TARGET == HWY_SCALAR
        const bool all_fast = false;
#else
        hn::Mask<decltype(dd)> fast_s, fast_c;
        const auto bits_s = Bits16FromF64<T>(dd, sv, fast_s);
        const auto bits_c = Bits16FromF64<T>(dd, cv, fast_c);
        const bool all_fast = hn::AllTrue(dd, hn::And(fast_s, fast_c));
#endif
        if (HWY_LIKELY(all_fast)) {
#if HWY_TARGET != HWY_SCALAR
          const hn::Rebind<uint32_t, decltype(dd)> du32;
          const hn::Repartition<uint16_t, decltype(du32)> dl;
          const auto pairs =
              hn::BitCast(dl, hn::TruncateTo(du32, hn::Or(bits_s, hn::ShiftLeft<16>(bits_c))));
          StoreRowVector(pairs, dl, o + 2 * j, stream);
#endif
        } else {  // zero, tiny, huge, ∞ or NaN lanes (and SCALAR): one lane at a time
          HWY_ALIGN double ws[hn::MaxLanes(dd)], wc[hn::MaxLanes(dd)];
          hn::Store(sv, dd, ws);
          hn::Store(cv, dd, wc);
          for (int64_t lane = 0; lane < N; ++lane) {
            o[2 * (j + lane)] = lowp::RoundF64<T>(ws[lane]);
            o[2 * (j + lane) + 1] = lowp::RoundF64<T>(wc[lane]);
          }
        }
#endif  // POSENC_SINUSOIDAL_AVX512
      }
    }
    for (; j < stop; ++j) {  // tails and strided rows
      const double sj = s[j - i0], cj = c[j - i0];
      store(out, out.offset(t, 2 * j), call.x ? load(*call.x, call.x->offset(t, 2 * j)) + sj : sj);
      store(out, out.offset(t, 2 * j + 1),
            call.x ? load(*call.x, call.x->offset(t, 2 * j + 1)) + cj : cj);
    }
  }
}

// Chains restart with a fresh SinCos at every row index that is a multiple of this (AngleWalker
// restarts every 16; a fresh SinCos costs about ten rotation steps, and 64 pays it a quarter as
// often).
constexpr int64_t kAnchorEvery = 64;
// f32 rows at unit stride go kRowsPerPass at a time: one pass over a block's sin/cos state rotates
// it that many times in registers, converting and storing each row on the way, so the state is
// loaded and stored once per pass instead of twice per row. Measured on an AMD EPYC (Zen 5), f32
// tables of 128 and 4096 rows against one row per unfused pass: 1.1x fused one row at a time,
// 1.2-1.5x two or four rows at a time (four no faster than two).
constexpr int64_t kRowsPerPass = 4;

// Rows [begin, end) for out's dtype T. A row's sin/cos (double) is a fresh SinCos of its exact
// angle (math-inl.h; off by less than 2⁻⁴⁶·⁸ plus a few roundings, say 2⁻⁴⁶·⁵) where a chain starts
// (row index a multiple of kAnchorEvery, or a position not the previous one's + 1), else the
// previous row's rotated by (cos ω, sin ω) as AngleWalker::Step does. Error budget, absolute:
//   a step's values (sin ω, cos ω) are libm's (Angles::steps), off by < 2⁻⁵⁰ each, so a rotation
//   by them moves the pair by ≤ √2·2⁻⁵⁰ = 2⁻⁴⁹·⁵, and its two roundings add ≤ 2⁻⁵²;
//   kAnchorEvery − 1 = 63 steps: 63·(2⁻⁴⁹·⁵ + 2⁻⁵²) < 2⁻⁴³·², plus the anchor's 2⁻⁴⁶·⁵: < 2⁻⁴³.
// That is < 2⁻²⁰ ulp_f32(1) < 10⁻⁶ ulp_f32(1 + |x|) before the single rounding to out's
// dtype (½ ulp): ≤ 0.500001 ulp_f32 in all for f32 (bound 1; sinusoidal_test checks ≤ 0.5001 at
// the end of full chains near 2²⁴), and bf16/f16 within ½ ulp of theirs + 10⁻⁶ ulp_f32.
// A part that begins inside a chain replays it from the chain's start without writing, so every
// row's values depend only on the positions and its index: bitwise identical for every thread
// count. A table's chains run column block by column block (kBlock), an add's whole rows.
template <class T>
void Rows(const SinusoidalCall& call, const Angles& angles, int64_t begin, int64_t end) {
  const hn::ScalableTag<double> dd;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  constexpr bool kF32Vectors = sizeof(T) == 4 && HWY_TARGET != HWY_SCALAR;  // EmitF32's rows
  const int64_t half = call.out.shape[1] / 2;
  const int64_t count = (half + N - 1) / N * N;  // angles computed: whole vectors
  const bool stream = StreamRows(call.out);
  const bool f32_pass = call.out.strides[1] == 1 && (!call.x || call.x->strides[1] == 1);
  const int64_t block = call.x ? count : std::min(kBlock, count);
  double* s = reusable<double>(2 * block);
  double* c = s + block;
  float* xf = call.x ? reusable<float>(2 * block) : nullptr;
  // (sin ω, cos ω): position 1, filled by run_sinusoidal when a call has more than one row (null,
  // and never read, in a one-row call).
  const double* step_sin = angles.steps.get();
  const double* step_cos = step_sin ? step_sin + angles.padded() : nullptr;
  const auto chains = [&](int64_t item) {
    return item % kAnchorEvery != 0 && call.position(item - 1) == call.position(item) - 1;
  };
  for (int64_t t = begin; t < end;) {
    int64_t first = t;  // the chain's start
    while (chains(first)) --first;
    int64_t last = t + 1;  // one past its end, within this part
    while (last < end && chains(last)) ++last;
    const int64_t p = call.position(first);
    // A row of its own (one token, or a position not following the previous one's) at unit
    // stride in f32 converts its whole vectors as they are made, not through s and c.
    const bool lone = kF32Vectors && last - first == 1 && f32_pass;
    float* lone_out = lone ? call.out.as<float>() + call.out.offset(t) : nullptr;
    const float* lone_x = lone && call.x ? call.x->as<float>() + call.x->offset(t) : nullptr;
    for (int64_t i0 = 0; i0 < count; i0 += block) {
      const int64_t n = std::min(block, count - i0);
      const int64_t emitted = lone ? std::clamp(half / N * N, i0, i0 + n) : i0;  // angles done
      ForEachAngleSinCos(dd, angles, p, i0, n, [&](int64_t i, auto sv, auto cv) {
        if constexpr (kF32Vectors) {
          if (i < emitted) {
            return EmitF32(dd, sv, cv, lone_x ? lone_x + 2 * i : nullptr, lone_out + 2 * i, stream);
          }
        }
        hn::Store(sv, dd, s + (i - i0));
        hn::Store(cv, dd, c + (i - i0));
      });
      if (lone) {  // its tail
        EmitBlock<T>(call, t, half, emitted, i0 + n - emitted, s + (emitted - i0),
                     c + (emitted - i0), xf, stream);
        continue;
      }
      for (int64_t item = first; item < last; ++item) {
        if constexpr (kF32Vectors) {
          if (item > first && item >= t && last - item >= kRowsPerPass && f32_pass &&
              i0 + n <= half) {
            float* o[kRowsPerPass];
            const float* x[kRowsPerPass];
            for (int64_t r = 0; r < kRowsPerPass; ++r) {
              o[r] = call.out.as<float>() + call.out.offset(item + r);
              x[r] = call.x ? call.x->as<float>() + call.x->offset(item + r) : nullptr;
            }
            for (int64_t i = 0; i < n; i += N) {
              auto sv = hn::Load(dd, s + i), cv = hn::Load(dd, c + i);
              const auto ss = hn::Load(dd, step_sin + i0 + i);
              const auto sc = hn::Load(dd, step_cos + i0 + i);
              const int64_t j = i0 + i;
#pragma GCC unroll 4
              for (int64_t r = 0; r < kRowsPerPass; ++r) {  // as AngleWalker::Step
                const auto next_sin = hn::MulAdd(sv, sc, hn::Mul(cv, ss));
                cv = hn::MulSub(cv, sc, hn::Mul(sv, ss));
                sv = next_sin;
                EmitF32(dd, sv, cv, x[r] ? x[r] + 2 * j : nullptr, o[r] + 2 * j, stream);
              }
              hn::Store(sv, dd, s + i);
              hn::Store(cv, dd, c + i);
            }
            item += kRowsPerPass - 1;
            continue;
          }
        }
        if (item > first) {  // rotate by one step, as AngleWalker::Step
          for (int64_t i = 0; i < n; i += N) {
            const auto sv = hn::Load(dd, s + i), cv = hn::Load(dd, c + i);
            const auto ss = hn::Load(dd, step_sin + i0 + i);
            const auto sc = hn::Load(dd, step_cos + i0 + i);
            hn::Store(hn::MulAdd(sv, sc, hn::Mul(cv, ss)), dd, s + i);
            hn::Store(hn::MulSub(cv, sc, hn::Mul(sv, ss)), dd, c + i);
          }
        }
        if (item >= t) EmitBlock<T>(call, item, half, i0, n, s, c, xf, stream);
      }
    }
    t = last;
  }
  if (stream) hwy::FlushStream();
}

void SinusoidalRows(const SinusoidalCall& call, const Angles& angles, int64_t begin, int64_t end) {
  switch (call.out.dtype) {
    case DType::bf16:
      return Rows<hwy::bfloat16_t>(call, angles, begin, end);
    case DType::f16:
      return Rows<hwy::float16_t>(call, angles, begin, end);
    default:
      return Rows<float>(call, angles, begin, end);
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using SinusoidalRowsFn = decltype(HWY_STATIC_DISPATCH(SinusoidalRows));

namespace {

void run_sinusoidal(const SinusoidalCall& call, SinusoidalRowsFn* rows) {
  call.validate();
  const int64_t tokens = call.out.shape[0], d = call.out.shape[1];
  if (tokens == 0) return;  // nothing to write, and d may be any size: no angle table for it
  // Measured on one thread (AMD EPYC, AVX3): an f32 table about 0.15–0.3 ns per element, an f32
  // add or a bf16/f16 row 0.3–0.8 (more when every position needs a fresh sin/cos).
  const double nanos = call.out.dtype == DType::f32 && !call.x ? 0.2 : 0.4;
  const int parts = plan_parts(call.threads, tokens, nanos * static_cast<double>(d));
  const Angles& angles = sinusoidal_angles(d, call.base);
  if (tokens > 1) fill_steps(angles);  // here: the memo is this thread's, and parts only read
  parallel_for(tokens, parts, [&](Range r) { rows(call, angles, r.begin, r.end); });
}

}  // namespace

// Angles exact in double (split frequencies), sin/cos in double, x added in double, rounded once:
// bound 1 ulp_f32(1 + |x|). bf16 and f16 outputs: the same double sums rounded once (scalar), held
// to 1 ulp of the output dtype (kernel.h).
std::vector<Impl<SinusoidalCall>> sinusoidal() {
  static const TargetTable<SinusoidalRowsFn> table = POSENC_TARGET_TABLE(SinusoidalRows);
  return target_impls<SinusoidalCall>("sinusoidal",
                                      variant::f32 | variant::bf16 | variant::f16 |
                                          variant::strided | variant::in_place |
                                          variant::sinusoidal_add | variant::sinusoidal_positions,
                                      /*bound=*/1, /*threaded=*/true, table, run_sinusoidal);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
