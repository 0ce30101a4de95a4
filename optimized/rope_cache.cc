// rope_cache: cos[p, i] = a·cos(p·ω_i), sin[p, i] = a·sin(p·ω_i). Exact angles and double
// sin/cos vectorized over i (row after row by one rotation step, see AngleWalker), scaled by a in
// double and rounded once to f32; rows split across threads. A bf16 table is rounded once from the
// double value by the contract's store() (scalar: through f32 it would round twice).
#ifndef POSENC_OPTIMIZED_ROPE_CACHE_SHARED
#define POSENC_OPTIMIZED_ROPE_CACHE_SHARED
#include <hwy/aligned_allocator.h>

#include <algorithm>

#include "optimized/angles.h"
#include "optimized/optimized.h"
#include "optimized/thread_pool.h"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/rope_cache.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void RopeCacheRows(const RopeCacheCall& call, const Angles& angles, int64_t begin, int64_t end) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many f32 lanes as double lanes
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd)), half = call.rotary_dim / 2;
  const Tensor &cos_out = call.cos, &sin_out = call.sin;
  const int64_t cs = cos_out.strides[1], ss = sin_out.strides[1];
  const auto a = hn::Set(dd, angles.attention_factor);
  HWY_ALIGN float cos_tail[hn::MaxLanes(df)], sin_tail[hn::MaxLanes(df)];
  HWY_ALIGN double cos_row[hn::MaxLanes(dd)], sin_row[hn::MaxLanes(dd)];
  const bool bf16 = cos_out.dtype == DType::bf16;
  // Row by row: the stores stream through memory in address order, which the hardware follows.
  auto scratch = hwy::AllocateAligned<double>(4 * angles.padded());
  AngleWalker walker(dd, angles, scratch.get());
  const auto row_position = [](int64_t row) { return row; };
  for (int64_t p = begin; p < end; ++p) {
    walker.At(p, row_position);
    if (bf16) {
      for (int64_t j = 0; j < half; j += N) {
        hn::Store(hn::Mul(hn::Load(dd, walker.cos() + j), a), dd, cos_row);
        hn::Store(hn::Mul(hn::Load(dd, walker.sin() + j), a), dd, sin_row);
        for (int64_t lane = 0; lane < N && j + lane < half; ++lane) {
          store(cos_out, cos_out.offset(p, j + lane), cos_row[lane]);
          store(sin_out, sin_out.offset(p, j + lane), sin_row[lane]);
        }
      }
      continue;
    }
    float* co = cos_out.as<float>() + cos_out.offset(p);
    float* so = sin_out.as<float>() + sin_out.offset(p);
    for (int64_t j = 0; j < half; j += N) {
      const auto cf = DemoteToF32(df, hn::Mul(hn::Load(dd, walker.cos() + j), a));
      const auto sf = DemoteToF32(df, hn::Mul(hn::Load(dd, walker.sin() + j), a));
      if (cs == 1 && ss == 1 && j + N <= half) {
        hn::StoreU(cf, df, co + j);
        hn::StoreU(sf, df, so + j);
        continue;
      }
      hn::Store(cf, df, cos_tail);
      hn::Store(sf, df, sin_tail);
      for (int64_t lane = 0; lane < N && j + lane < half; ++lane) {
        co[(j + lane) * cs] = cos_tail[lane];
        so[(j + lane) * ss] = sin_tail[lane];
      }
    }
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using RopeCacheRowsFn = decltype(HWY_STATIC_DISPATCH(RopeCacheRows));

namespace {

void run_rope_cache(const RopeCacheCall& call, RopeCacheRowsFn* rows) {
  call.validate();
  const int64_t count = call.cos.shape[0];
  if (count == 0) return;  // nothing to write, and rotary_dim may be any size
  // Measured: about 0.5 ns per cos/sin pair (the table's writes to memory dominate).
  const int parts = plan_parts(call.threads, count, 0.5 * static_cast<double>(call.rotary_dim / 2));
  const Angles& angles = rope_angles(call.rotary_dim, call.base, call.scaling);
  parallel_for(count, parts, [&](Range r) { rows(call, angles, r.begin, r.end); });
}

}  // namespace

// a·cos(p·ω), a·sin(p·ω) from exact angles and double sin/cos, rounded once to f32: bound 1 ulp(a).
// A bf16 table is rounded once to bf16 from the same double values.
std::vector<Impl<RopeCacheCall>> rope_cache() {
  static const TargetTable<RopeCacheRowsFn> table = POSENC_TARGET_TABLE(RopeCacheRows);
  return target_impls<RopeCacheCall>(
      "rope_cache", variant::f32 | variant::bf16 | variant::strided | variant::all_scalings,
      /*bound=*/1, /*threaded=*/true, table, run_rope_cache);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
