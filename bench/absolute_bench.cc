// absolute: out = x + table[positions], out of place, width = heads·head_dim (512 to 4096); f32,
// and bf16 and f16 x, table and out ("bf16", "f16": half the bytes).
// The learned table has 4096 rows; 32768 tokens are 8 packed sequences of 4096.
#include "bench/bench.h"

namespace posenc::bench {
namespace {

constexpr int64_t kRows = 4096;

Case<AbsoluteCall> absolute_case(const TokenShape& s, DType dtype) {
  const int64_t t = s.tokens, width = s.heads * s.head_dim;
  const auto element = static_cast<double>(dtype_size(dtype));
  const double bytes = 3.0 * element * static_cast<double>(t * width) + 8.0 * t;  // x, rows, out
  return {
      .label = "t=" + std::to_string(t) + ",width=" + std::to_string(width) +
               (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
      .bytes = bytes,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [t, width, dtype](Buffers& b) {
            AbsoluteCall call;
            call.x = b.values(dtype, {t, width});
            call.table = b.values(dtype, {kRows, width});
            call.positions = b.positions(t, first_position(t), kRows);
            call.out = dtype == DType::f32 ? b.zeros({t, width}) : b.values(dtype, {t, width});
            return call;
          },
  };
}

void register_absolute() {
  for (const TokenShape& s : token_shapes())
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      register_case(absolute_case(s, dtype));
}

const bool registered = add_family(Family::absolute, register_absolute);

}  // namespace
}  // namespace posenc::bench
