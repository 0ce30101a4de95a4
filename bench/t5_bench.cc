// t5: the relative-position bias [heads, tq, tk] looked up from a [32 buckets, heads] table
// (max_distance 128), bidirectional (encoder) and causal (decoder), for 8 and 64 heads, f32, bf16
// and f16 (table and bias; "bf16", "f16": half the bytes).
#include "bench/bench.h"

namespace posenc::bench {
namespace {

constexpr int64_t kBuckets = 32;

Case<T5Call> t5_case(const BiasShape& s, bool bidirectional, DType dtype) {
  const auto element = static_cast<double>(dtype_size(dtype));
  const double bytes = element * static_cast<double>(s.heads * s.tq * s.tk + kBuckets * s.heads) +
                       8.0 * static_cast<double>(s.tq + s.tk);  // bias, table; positions
  return {
      .label = s.label() + (bidirectional ? ",bidirectional" : ",causal") +
               (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
      .bytes = bytes,
      .write_only = true,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [=](Buffers& b) {
            T5Call call;
            call.bidirectional = bidirectional;
            call.n_buckets = kBuckets;
            call.q_positions = b.positions(s.tq, s.tk - s.tq);
            call.k_positions = b.positions(s.tk);
            call.table = b.values(dtype, {kBuckets, s.heads});
            call.bias = b.values(dtype, {s.heads, s.tq, s.tk});
            return call;
          },
      .plain =
          [=](const T5Call& call, Buffers&) {
            return [=](int threads) {
              plain_t5(call.bias.data, plain_element(dtype), call.table.data, kBuckets, s.heads,
                       bidirectional, call.max_distance, call.q_positions.as<int64_t>(), s.tq,
                       call.k_positions.as<int64_t>(), s.tk, threads);
            };
          },
  };
}

void register_t5() {
  for (const BiasShape& s : bias_shapes())
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      for (bool bidirectional : {true, false}) register_case(t5_case(s, bidirectional, dtype));
}

const bool registered = add_family(Family::t5, register_t5);

}  // namespace
}  // namespace posenc::bench
