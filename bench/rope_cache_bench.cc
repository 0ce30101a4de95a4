// rope_cache: the cos/sin tables for 128, 4096 and 32768 positions, rotary_dim 64 and 128. The
// scaling only changes the rotary_dim/2 frequencies (rope_frequencies times every kind), so these
// use none. Only writes: bytes = rows·rotary_dim·4.
#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<RopeCacheCall> rope_cache_case(int64_t rows, int64_t d) {
  const double bytes = 4.0 * static_cast<double>(rows * d);
  return {
      .label = "rows=" + std::to_string(rows) + ",d=" + std::to_string(d),
      .bytes = bytes,
      .write_only = true,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [=](Buffers& b) {
            RopeCacheCall call;
            call.rotary_dim = d;
            call.cos = b.zeros({rows, d / 2});
            call.sin = b.zeros({rows, d / 2});
            return call;
          },
  };
}

void register_rope_cache() {
  const std::vector<int64_t> rows =
      smoke() ? std::vector<int64_t>{16} : std::vector<int64_t>{128, 4096, 32768};
  const std::vector<int64_t> dims =
      smoke() ? std::vector<int64_t>{64} : std::vector<int64_t>{64, 128};
  for (int64_t r : rows)
    for (int64_t d : dims) register_case(rope_cache_case(r, d));
}

const bool registered = add_family(Family::rope_cache, register_rope_cache);

}  // namespace
}  // namespace posenc::bench
