// sinusoidal: out[t, 2i] = x[t, 2i] + sin(p·ω_i), out[t, 2i+1] = x[t, 2i+1] + cos(p·ω_i).
// Per token: exact angles and double sin/cos for every i (vectorized over i; consecutive positions
// step by one rotation, see AngleWalker), interleaved into one row of PE in double; then x is added
// in double and each element rounded once to f32. A bf16 or f16 row is the same double sums
// rounded once to its dtype: to f32 rounding to odd, then to nearest even (math-inl.h's lowp), with
// x widened to f32 first (exact); strided rows use the contract's load() and store() instead.
#ifndef POSENC_OPTIMIZED_SINUSOIDAL_SHARED
#define POSENC_OPTIMIZED_SINUSOIDAL_SHARED
#include <hwy/aligned_allocator.h>

#include <algorithm>

#include "optimized/angles.h"
#include "optimized/optimized.h"
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

// Row t of a contiguous bf16 or f16 (T) out: x (if any) widened into xf, the double sums rounded to
// f32 to odd into of (both 2·half floats), then each rounded to T.
template <class T>
void LowpRow(const SinusoidalCall& call, int64_t t, int64_t half, const double* sin,
             const double* cos, float* xf, float* of) {
  const hn::ScalableTag<float> d;
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many f32 lanes as double lanes
  const int64_t N = static_cast<int64_t>(hn::Lanes(d)), H = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t width = 2 * half;
  const Tensor& out = call.out;
  if (call.x) {
    const T* xr = call.x->as<T>() + call.x->offset(t);
    int64_t c = 0;
    for (; c + N <= width; c += N) hn::StoreU(lowp::LoadF32(d, xr + c), d, xf + c);
    for (; c < width; ++c) xf[c] = static_cast<float>(load(*call.x, call.x->offset(t, c)));
  }
  int64_t j = 0;
  for (; j + H <= half; j += H) {
    auto s = hn::Load(dd, sin + j), c = hn::Load(dd, cos + j);
    if (call.x) {
      hn::Vec<decltype(df)> x_sin, x_cos;
      hn::LoadInterleaved2(df, xf + 2 * j, x_sin, x_cos);
      s = hn::Add(hn::PromoteTo(dd, x_sin), s);
      c = hn::Add(hn::PromoteTo(dd, x_cos), c);
    }
    hn::StoreInterleaved2(lowp::DemoteToF32RoundToOdd(df, s), lowp::DemoteToF32RoundToOdd(df, c),
                          df, of + 2 * j);
  }
  for (; j < half; ++j) {  // the same double sums, rounded to odd
    of[2 * j] = lowp::RoundToOddF32(call.x ? static_cast<double>(xf[2 * j]) + sin[j] : sin[j]);
    of[2 * j + 1] =
        lowp::RoundToOddF32(call.x ? static_cast<double>(xf[2 * j + 1]) + cos[j] : cos[j]);
  }
  T* o = out.as<T>() + out.offset(t);
  int64_t c = 0;
  for (; c + N <= width; c += N) lowp::StoreF32(d, hn::LoadU(d, of + c), o + c);
  for (; c < width; ++c)
    reinterpret_cast<uint16_t*>(o)[c] = lowp::RoundF64<T>(static_cast<double>(of[c]));
}

void SinusoidalRows(const SinusoidalCall& call, const Angles& angles, int64_t begin, int64_t end) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many f32 lanes as double lanes
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const Tensor& out = call.out;
  const int64_t half = out.shape[1] / 2, os = out.strides[1];
  const int64_t xs = call.x ? call.x->strides[1] : 0;
  // Highway 1.0.3's scalar DemoteTo(double → float) saturates ±∞ to ±FLT_MAX
  // (hwy/ops/scalar-inl.h), so x = −∞ would come out finite: the scalar target takes the
  // static_cast loop below, which rounds the same double sum once and keeps ∞.
  const bool unit_stride = os == 1 && (!call.x || xs == 1) && HWY_TARGET != HWY_SCALAR;
  // bf16 and f16 rows: vectorized on every target (their f32 stage rounds to odd, which Highway's
  // scalar DemoteTo's saturation does not affect: math-inl.h's DemoteToF32 avoids it).
  const bool lowp_unit_stride = os == 1 && (!call.x || xs == 1);
  const int64_t width = 2 * half;
  hwy::AlignedFreeUniquePtr<float[]> lowp_rows;
  if (out.dtype != DType::f32) lowp_rows = hwy::AllocateAligned<float>(2 * width + 64);
  // Row by row: the stores stream through memory in address order, which the hardware follows.
  auto scratch = hwy::AllocateAligned<double>(4 * angles.padded());
  AngleWalker walker(dd, angles, scratch.get());
  const auto position = [&](int64_t t) { return call.position(t); };
  for (int64_t t = begin; t < end; ++t) {
    walker.At(t, position);
    const double *sin = walker.sin(), *cos = walker.cos();
    if (out.dtype != DType::f32 && lowp_unit_stride) {
      if (out.dtype == DType::bf16) {
        LowpRow<hwy::bfloat16_t>(call, t, half, sin, cos, lowp_rows.get(), lowp_rows.get() + width);
      } else {
        LowpRow<hwy::float16_t>(call, t, half, sin, cos, lowp_rows.get(), lowp_rows.get() + width);
      }
      continue;
    }
    if (out.dtype != DType::f32) {  // strided: the reference's loop over the same double sums
      for (int64_t j = 0; j < half; ++j) {
        const double s = call.x ? load(*call.x, call.x->offset(t, 2 * j)) + sin[j] : sin[j];
        const double c = call.x ? load(*call.x, call.x->offset(t, 2 * j + 1)) + cos[j] : cos[j];
        store(out, out.offset(t, 2 * j), s);
        store(out, out.offset(t, 2 * j + 1), c);
      }
      continue;
    }
    float* o = out.as<float>() + out.offset(t);
    const float* x = call.x ? call.x->as<float>() + call.x->offset(t) : nullptr;
    int64_t j = 0;
    if (unit_stride) {
      for (; j + N <= half; j += N) {
        auto s = hn::Load(dd, sin + j), c = hn::Load(dd, cos + j);
        if (x) {
          hn::Vec<decltype(df)> x_sin, x_cos;
          hn::LoadInterleaved2(df, x + 2 * j, x_sin, x_cos);
          s = hn::Add(hn::PromoteTo(dd, x_sin), s);
          c = hn::Add(hn::PromoteTo(dd, x_cos), c);
        }
        hn::StoreInterleaved2(DemoteToF32(df, s), DemoteToF32(df, c), df, o + 2 * j);
      }
    }
    for (; j < half; ++j) {  // tails and strided rows: the same double add, rounded once
      const double s = x ? static_cast<double>(x[2 * j * xs]) + sin[j] : sin[j];
      const double c = x ? static_cast<double>(x[(2 * j + 1) * xs]) + cos[j] : cos[j];
      o[2 * j * os] = RoundToF32(s);
      o[(2 * j + 1) * os] = RoundToF32(c);
    }
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
  // Measured: about 0.4 ns per element (0.8 when every position needs a fresh sin/cos).
  const int parts = plan_parts(call.threads, tokens, 0.4 * static_cast<double>(d));
  const Angles& angles = sinusoidal_angles(d, call.base);
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
