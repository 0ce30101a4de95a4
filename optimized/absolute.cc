// absolute: out[t] = x[t] + table[positions[t]], bitwise the reference's fp64 sum rounded once to
// out's dtype. Tokens are split across threads; rows with unit strides are vectorized, others take
// the reference's loop (the contract's load() and store()).
//
// The reference rounds the exact sum to fp64, then to out's dtype. Rounding twice to nearest is
// the same as rounding once when the first precision p' and the second p satisfy p' ≥ 2p + 1 and
// both addends are in the second format (Figueroa, "When is double rounding innocuous?", 1995):
// so the fp64 sum rounded to out's dtype equals the correctly rounded sum, and so does one f32 add
// (p' = 24) rounded to bf16 (p = 8) or f16 (p = 11), when x and table are both out's dtype, and the
// f32 add alone when out is f32 (a bf16 or f16 table widens to f32 exactly). In the range below
// f32's normals every such sum is exact in f32, and f32 overflows only past bf16's own ∞ threshold.
// A bf16 or f16 out with a table of another dtype adds in fp64 and rounds to f32 to odd, then to
// nearest even (math-inl.h's lowp): the reference's one rounding of its fp64 sum.
#ifndef POSENC_OPTIMIZED_ABSOLUTE_SHARED
#define POSENC_OPTIMIZED_ABSOLUTE_SHARED
#include "optimized/optimized.h"
#include "optimized/thread_pool.h"
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/absolute.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows [begin, end) with x and out of element type TO and the table of TT.
template <class TO, class TT>
void AbsoluteRowsOf(const AbsoluteCall& call, int64_t begin, int64_t end) {
  // One f32 add suffices (see the top); otherwise the sum is in fp64.
  constexpr bool kF32Sum = sizeof(TO) == 4 || std::is_same_v<TO, TT>;
  const hn::ScalableTag<float> d;
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;  // as many f32 lanes as double lanes
  const int64_t N = static_cast<int64_t>(kF32Sum ? hn::Lanes(d) : hn::Lanes(dh));
  const Tensor &x = call.x, &table = call.table, &out = call.out;
  const int64_t dim = x.shape[1];
  const bool unit_stride = x.strides[1] == 1 && table.strides[1] == 1 && out.strides[1] == 1;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t row = load_index(call.positions, call.positions.offset(t));
    const TO* xr = x.as<TO>() + x.offset(t);
    const TT* pr = table.as<TT>() + table.offset(row);
    TO* o = out.as<TO>() + out.offset(t);
    if (!unit_stride) {
      for (int64_t c = 0; c < dim; ++c) {
        if constexpr (sizeof(TO) == 4 && sizeof(TT) == 4) {
          o[c * out.strides[1]] = xr[c * x.strides[1]] + pr[c * table.strides[1]];
        } else {
          store(out, out.offset(t, c), load(x, x.offset(t, c)) + load(table, table.offset(row, c)));
        }
      }
      continue;
    }
    int64_t c = 0;
    for (; c + N <= dim; c += N) {
      if constexpr (kF32Sum) {
        lowp::StoreF32(d, hn::Add(lowp::LoadF32(d, xr + c), lowp::LoadF32(d, pr + c)), o + c);
      } else {
        const auto sum = hn::Add(hn::PromoteTo(dd, lowp::LoadF32(dh, xr + c)),
                                 hn::PromoteTo(dd, lowp::LoadF32(dh, pr + c)));
        lowp::StoreF32(dh, lowp::DemoteToF32RoundToOdd(dh, sum), o + c);
      }
    }
    if constexpr (sizeof(TO) == 4 && sizeof(TT) == 4) {
      for (; c < dim; ++c) o[c] = xr[c] + pr[c];
    } else {
      for (; c < dim; ++c)
        store(out, out.offset(t, c), load(x, x.offset(t, c)) + load(table, table.offset(row, c)));
    }
  }
}

template <class TO>
void AbsoluteRowsTo(const AbsoluteCall& call, int64_t begin, int64_t end) {
  switch (call.table.dtype) {
    case DType::bf16:
      return AbsoluteRowsOf<TO, hwy::bfloat16_t>(call, begin, end);
    case DType::f16:
      return AbsoluteRowsOf<TO, hwy::float16_t>(call, begin, end);
    default:
      return AbsoluteRowsOf<TO, float>(call, begin, end);
  }
}

void AbsoluteRows(const AbsoluteCall& call, int64_t begin, int64_t end) {
  switch (call.out.dtype) {
    case DType::bf16:
      return AbsoluteRowsTo<hwy::bfloat16_t>(call, begin, end);
    case DType::f16:
      return AbsoluteRowsTo<hwy::float16_t>(call, begin, end);
    default:
      return AbsoluteRowsTo<float>(call, begin, end);
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

// out = x + table[positions] in f32: one correctly rounded add, so bound 0 (bitwise). bf16 and f16:
// the reference's double add rounded once (scalar), bitwise too.
std::vector<Impl<AbsoluteCall>> absolute() {
  static const TargetTable<AbsoluteRowsFn> table = POSENC_TARGET_TABLE(AbsoluteRows);
  return target_impls<AbsoluteCall>(
      "absolute",
      variant::f32 | variant::bf16 | variant::f16 | variant::strided | variant::in_place,
      /*bound=*/0, /*threaded=*/true, table, run_absolute);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
