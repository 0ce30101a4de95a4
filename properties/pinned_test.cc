// Under a pin (PinnedRope, `posenc validate --config`) every call the rope families' properties
// hand a kernel has the model's parameters and positions below its max_position_embeddings, and
// the properties that cannot run so are skipped with their reason. A kernel that throws on any
// other parameters passes under the pin and fails without it (so the check is not vacuous).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "properties/property.h"
#include "properties/validate.h"

namespace posenc::harness {
namespace {

PinnedRope llama31() {  // config/models/llama-3.1-8b.json
  PinnedRope pin{.head_dim = 128, .rotary_dim = 128, .base = 500000, .max_position = 131072};
  pin.label = "Llama 3.1 8B";
  pin.scaling.kind = RopeScalingKind::llama3;
  pin.scaling.factor = 8;
  pin.scaling.low_freq_factor = 1;
  pin.scaling.high_freq_factor = 4;
  pin.scaling.original_max_position = 8192;
  return pin;
}

PinnedRope partial_yarn() {  // a partial rotary YaRN model: attention factor 1 + 0.1·ln 4
  PinnedRope pin{.head_dim = 96, .rotary_dim = 48, .base = 10000, .max_position = 16384};
  pin.label = "partial yarn";
  pin.layout = RopeLayout::interleaved;
  pin.scaling.kind = RopeScalingKind::yarn;
  pin.scaling.factor = 4;
  pin.scaling.original_max_position = 4096;
  return pin;
}

PinnedRope qwen3_vl() {  // config/models/qwen3-vl-4b-instruct.json
  PinnedRope pin{.head_dim = 128, .rotary_dim = 128, .base = 5000000, .max_position = 262144};
  pin.label = "Qwen3-VL 4B";
  pin.mrope_section = {{24, 20, 20}};
  pin.mrope_convention = MropeConvention::interleaved;
  return pin;
}

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

std::string scaling_mismatch(const RopeScaling& a, const RopeScaling& b) {
  const bool ok =
      a.kind == b.kind && same(a.factor, b.factor) && same(a.alpha, b.alpha) &&
      a.max_position == b.max_position && a.original_max_position == b.original_max_position &&
      a.seq_len == b.seq_len && same(a.beta_fast, b.beta_fast) && same(a.beta_slow, b.beta_slow) &&
      same(a.mscale, b.mscale) && same(a.mscale_all_dim, b.mscale_all_dim) &&
      a.truncate == b.truncate && same(a.low_freq_factor, b.low_freq_factor) &&
      same(a.high_freq_factor, b.high_freq_factor) && a.short_factor == b.short_factor &&
      a.long_factor == b.long_factor && same(a.attention_factor, b.attention_factor);
  return ok ? "" : "scaling " + a.describe() + ", pinned " + b.describe();
}

std::string mismatch(const PinnedRope& pin, const RopeFrequenciesCall& c) {
  if (c.rotary_dim != pin.rotary_dim) return "rotary_dim " + std::to_string(c.rotary_dim);
  if (c.base != pin.base) return "base " + std::to_string(c.base);
  return scaling_mismatch(c.scaling, pin.scaling);
}

std::string mismatch(const PinnedRope& pin, const RopeCacheCall& c) {
  if (c.cos.shape[0] > pin.max_position) return "rows " + std::to_string(c.cos.shape[0]);
  return mismatch(
      pin, RopeFrequenciesCall{.rotary_dim = c.rotary_dim, .base = c.base, .scaling = c.scaling});
}

// The largest of a positions view's entries.
int64_t max_position(const Tensor& positions) {
  int64_t top = -1;
  for (int64_t t = 0; t < positions.shape[0]; ++t)
    for (int64_t a = 0; a < (positions.rank == 2 ? positions.shape[1] : 1); ++a)
      top = std::max(
          top, load_index(positions, t * positions.strides[0] +
                                         (positions.rank == 2 ? a * positions.strides[1] : 0)));
  return top;
}

template <class Call>
std::string rope_shaped_mismatch(const PinnedRope& pin, const Call& c) {
  if (c.q.shape[2] != pin.head_dim) return "head_dim " + std::to_string(c.q.shape[2]);
  if (c.layout != pin.layout) return std::string("layout ") + layout_name(c.layout);
  if (max_position(c.positions) >= pin.max_position)
    return "position " + std::to_string(max_position(c.positions));
  return mismatch(
      pin, RopeFrequenciesCall{.rotary_dim = c.rotary_dim, .base = c.base, .scaling = c.scaling});
}

std::string mismatch(const PinnedRope& pin, const RopeCall& c) {
  return rope_shaped_mismatch(pin, c);
}

std::string mismatch(const PinnedRope& pin, const MropeCall& c) {
  if (c.mrope_section != *pin.mrope_section || c.convention != pin.mrope_convention)
    return "mrope_section or convention";
  return rope_shaped_mismatch(pin, c);
}

// The reference, refusing (after the contract's own checks) any call off the pin.
template <class Call>
Impl<Call> pinned_only(const PinnedRope& pin) {
  Impl<Call> impl = reference_impl<Call>();
  impl.name = family_name(Call::kFamily) + std::string("/pinned_only");
  impl.run = [run = impl.run, pin](const Call& call) {
    call.validate();
    if (const std::string m = mismatch(pin, call); !m.empty())
      throw std::runtime_error("off the pin: " + m);
    run(call);
  };
  return impl;
}

// Runs every property of Call's family on pinned_only(pin); returns the names of those skipped.
template <class Call>
std::vector<std::string> run_pinned(const PinnedRope& pin, bool pinned, int cases = 20) {
  const Impl<Call> impl = pinned_only<Call>(pin);
  ValidateOptions options;
  options.run.cases = cases;
  if (pinned) options.run.pinned = pin;
  const auto reports = validate<Call>({&impl}, options);
  std::vector<std::string> skipped;
  int passed = 0, failed = 0;
  for (const PropertyResult& r : reports.at(0).results) {
    if (r.status == PropertyResult::Status::skipped) {
      skipped.push_back(r.property.substr(r.property.find('.') + 1));
      if (pinned) {
        EXPECT_FALSE(r.note.empty()) << r.property;
      }
    }
    passed += r.status == PropertyResult::Status::passed;
    failed += r.failed();
    if (pinned) {
      EXPECT_FALSE(r.failed()) << pin.label << ": " << r.property << "\n" << r.failure;
    }
  }
  if (pinned) {
    EXPECT_GT(passed, 0);
  } else {
    EXPECT_GT(failed, 0) << "a kernel refusing everything off the pin passed unpinned";
  }
  return skipped;
}

using Names = std::vector<std::string>;

TEST(Pinned, RopeCallsCarryTheModelsParameters) {
  // Llama 3.1: attention factor 1, full rotary, half-split.
  EXPECT_EQ(run_pinned<RopeCall>(llama31(), true),
            (Names{"threads", "interleaved_permutation", "tail_untouched",
                   "linear_is_position_over_factor", "shuffle"}));
  // Partial rotary YaRN: f ≠ 1, so composition and inverse cannot run; the tail can.
  EXPECT_EQ(run_pinned<RopeCall>(partial_yarn(), true),
            (Names{"threads", "composition", "inverse", "interleaved_permutation",
                   "linear_is_position_over_factor", "shuffle"}));
  run_pinned<RopeCall>(llama31(), false);
}

TEST(Pinned, FrequencyAndCacheCallsCarryTheModelsParameters) {
  EXPECT_EQ(run_pinned<RopeFrequenciesCall>(llama31(), true),
            (Names{"threads", "dynamic_unscaled", "yarn_between"}));
  EXPECT_EQ(run_pinned<RopeFrequenciesCall>(partial_yarn(), true),
            (Names{"threads", "dynamic_unscaled", "llama3_between"}));
  run_pinned<RopeFrequenciesCall>(llama31(), false);
  EXPECT_EQ(run_pinned<RopeCacheCall>(llama31(), true), (Names{"threads"}));
  run_pinned<RopeCacheCall>(llama31(), false);
}

TEST(Pinned, SwitchClassesAreParameterClasses) {
  // From 100 cases the minimum shares are judged. A pin leaves seq_len, YaRN's factor and Llama 3's
  // band edges where the model has them, so their classes cannot be required of its run.
  for (const char* tag : {"seq_len at its switch", "yarn factor <= 1, derived attention factor",
                          "llama3 wavelength at its threshold"})
    EXPECT_TRUE(is_parameter_class(tag)) << tag;
  run_pinned<RopeFrequenciesCall>(llama31(), true, 100);
}

TEST(Pinned, MropeCallsCarryTheModelsSection) {
  EXPECT_EQ(run_pinned<MropeCall>(qwen3_vl(), true), (Names{"threads"}));
  run_pinned<MropeCall>(qwen3_vl(), false);
}

TEST(Pinned, ParameterClassesAndPositions) {
  EXPECT_TRUE(is_parameter_class("long positions"));
  EXPECT_TRUE(is_parameter_class("yarn"));
  EXPECT_FALSE(is_parameter_class("GQA"));
  EXPECT_FALSE(is_parameter_class("bf16"));
  const PinnedRope pin = llama31();
  EXPECT_EQ(pin.position_cap(kMaxPosition), 131071);
  EXPECT_EQ(pin.position_cap(2047), 2047);
  EXPECT_EQ(pinned_position_cap(kMaxPosition), kMaxPosition);  // no pin outside a run
  {
    const std::optional<PinnedRope> held = pin;
    const PinScope scope(held);
    EXPECT_EQ(pinned_position_cap(kMaxPosition), 131071);
  }
  EXPECT_EQ(pinned_rope(), nullptr);
  EXPECT_NE(pin.describe().find("llama3(factor=8"), std::string::npos) << pin.describe();
  EXPECT_NE(partial_yarn().describe().find("attention_factor=1.138"), std::string::npos)
      << partial_yarn().describe();
}

}  // namespace
}  // namespace posenc::harness
