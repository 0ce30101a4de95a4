// absolute: out[t] = x[t] + table[positions[t]], one f32 add per element (correctly rounded, so
// bitwise equal to the reference). Tokens are split across threads; rows are vectorized.
// Rows with a bf16 or f16 x, out or table take a scalar loop: the reference's double add, rounded
// once by the contract's store() (bitwise equal too; not vectorized yet).
#ifndef POSENC_OPTIMIZED_ABSOLUTE_SHARED
#define POSENC_OPTIMIZED_ABSOLUTE_SHARED
#include "optimized/optimized.h"
#include "optimized/thread_pool.h"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/absolute.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void AbsoluteRows(const AbsoluteCall& call, int64_t begin, int64_t end) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const Tensor &x = call.x, &table = call.table, &out = call.out;
  const int64_t dim = x.shape[1];
  const bool unit_stride = x.strides[1] == 1 && table.strides[1] == 1 && out.strides[1] == 1;
  const bool f32 = out.dtype == DType::f32 && table.dtype == DType::f32;  // x's is out's
  for (int64_t t = begin; t < end; ++t) {
    const int64_t row = load_index(call.positions, call.positions.offset(t));
    if (!f32) {
      for (int64_t c = 0; c < dim; ++c)
        store(out, out.offset(t, c), load(x, x.offset(t, c)) + load(table, table.offset(row, c)));
      continue;
    }
    const float* xr = x.as<float>() + x.offset(t);
    const float* pr = table.as<float>() + table.offset(row);
    float* o = out.as<float>() + out.offset(t);
    if (unit_stride) {
      int64_t c = 0;
      for (; c + N <= dim; c += N)
        hn::StoreU(hn::Add(hn::LoadU(d, xr + c), hn::LoadU(d, pr + c)), d, o + c);
      for (; c < dim; ++c) o[c] = xr[c] + pr[c];
    } else {
      for (int64_t c = 0; c < dim; ++c) {
        o[c * out.strides[1]] = xr[c * x.strides[1]] + pr[c * table.strides[1]];
      }
    }
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using AbsoluteRowsFn = decltype(HWY_STATIC_DISPATCH(AbsoluteRows));

namespace {

void run_absolute(const AbsoluteCall& call, AbsoluteRowsFn* rows) {
  call.validate();
  const int64_t tokens = call.x.shape[0];
  // About a quarter nanosecond per element once the rows stream from memory.
  const int parts = plan_parts(call.threads, tokens, 0.25 * static_cast<double>(call.x.shape[1]));
  parallel_for(tokens, parts, [&](Range r) { rows(call, r.begin, r.end); });
}

}  // namespace

std::vector<Impl<AbsoluteCall>> absolute() {
  static const TargetTable<AbsoluteRowsFn> table = POSENC_TARGET_TABLE(AbsoluteRows);
  return target_impls<AbsoluteCall>(
      "absolute",
      variant::f32 | variant::bf16 | variant::f16 | variant::strided | variant::in_place,
      /*bound=*/0, /*threaded=*/true, table, run_absolute);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
