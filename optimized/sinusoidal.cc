// sinusoidal: out[t, 2i] = x[t, 2i] + sin(p·ω_i), out[t, 2i+1] = x[t, 2i+1] + cos(p·ω_i).
// Per token: exact angles and double sin/cos for every i (vectorized over i; consecutive positions
// step by one rotation, see AngleWalker), interleaved into one row of PE in double; then x is added
// in double and each element rounded once to f32. bf16 and f16 outputs take a scalar loop over the
// same double sums, rounded once by the contract's store() (not vectorized yet).
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
  // Row by row: the stores stream through memory in address order, which the hardware follows.
  auto scratch = hwy::AllocateAligned<double>(4 * angles.padded());
  AngleWalker walker(dd, angles, scratch.get());
  const auto position = [&](int64_t t) { return call.position(t); };
  for (int64_t t = begin; t < end; ++t) {
    walker.At(t, position);
    const double *sin = walker.sin(), *cos = walker.cos();
    if (out.dtype != DType::f32) {
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
