// rope_frequencies: ω and the attention factor for every scaling kind, rotary_dim 128. A
// call is tiny (rotary_dim/2 + 1 doubles written): its time is the latency of a model-load step,
// and roof_pct compares it with streaming the same few bytes.
#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<RopeFrequenciesCall> rope_frequencies_case(int64_t d, const std::string& name,
                                                const RopeScaling& scaling) {
  return {
      .label = "d=" + std::to_string(d) + "," + name,
      .bytes = 8.0 * static_cast<double>(d / 2 + 1),
      .reference = true,
      .build =
          [=](Buffers& b) {
            RopeFrequenciesCall call;
            call.rotary_dim = d;
            call.scaling = scaling;
            call.inv_freq = b.zeros_f64({d / 2});
            call.attention_factor = b.zeros_f64({1});
            return call;
          },
  };
}

void register_rope_frequencies() {
  const int64_t d = smoke() ? 64 : 128;
  for (const auto& [name, scaling] : rope_scalings(d))
    register_case(rope_frequencies_case(d, name, scaling));
}

const bool registered = add_family(Family::rope_frequencies, register_rope_frequencies);

}  // namespace
}  // namespace posenc::bench
