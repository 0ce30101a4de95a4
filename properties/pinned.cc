// The pinned rope parameters of `posenc validate --config` (PinnedRope, property.h): the pin of
// the running property, and the classes whose minimum shares a pin makes meaningless.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "properties/property.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {
// Per thread: a property generates its cases on the thread that runs check(), and two threads
// may check different families (or pins) at once.
thread_local const PinnedRope* current_pin = nullptr;
}  // namespace

double PinnedRope::attention_factor() const {
  return reference::frequencies(rotary_dim, base, scaling).attention_factor;
}

int64_t PinnedRope::position_cap(int64_t cap) const {
  return max_position > 0 ? std::min(cap, max_position - 1) : cap;
}

std::string PinnedRope::describe() const {
  std::string s =
      fmt::format("head_dim={} rotary_dim={} {} base={} {} attention_factor={}", head_dim,
                  rotary_dim, layout_name(layout), base, scaling.describe(), attention_factor());
  if (mrope_section)
    s += fmt::format(" mrope_section=[{}, {}, {}] {}", (*mrope_section)[0], (*mrope_section)[1],
                     (*mrope_section)[2], convention_name(mrope_convention));
  return s + fmt::format(" positions < {}", max_position > 0 ? max_position : kMaxPosition + 1);
}

const PinnedRope* pinned_rope() { return current_pin; }

int64_t pinned_position_cap(int64_t cap) {
  return current_pin ? current_pin->position_cap(cap) : cap;
}

std::string needs_unit_factor(const PinnedRope& pin) {
  const double f = pin.attention_factor();
  if (f == 1) return "";
  return fmt::format("needs attention factor 1 (it composes rotations), and the model's is {}", f);
}

bool is_parameter_class(const std::string& tag) {
  static const std::vector<std::string> parameter_classes = {
      "long positions", "long shift", "long offset", "tail", "partial", "interleaved",
      "interleaved axes", "interleaved pairs", "factor > 1", "explicit attention factor",
      // Where the scaling's parameters sit against its switches (classify_switches).
      "seq_len at its switch", "seq_len beside its switch",
      "yarn factor <= 1, derived attention factor", "yarn factor <= 1, explicit attention factor",
      "llama3 wavelength at its threshold", "llama3 wavelength one ulp beside its threshold"};
  if (std::find(parameter_classes.begin(), parameter_classes.end(), tag) != parameter_classes.end())
    return true;
  for (int k = 0; k <= static_cast<int>(RopeScalingKind::longrope); ++k)
    if (tag == scaling_name(static_cast<RopeScalingKind>(k))) return true;
  return false;
}

PinScope::PinScope(const std::optional<PinnedRope>& pin) : previous_(current_pin) {
  current_pin = pin ? &*pin : previous_;
}

PinScope::~PinScope() { current_pin = previous_; }

}  // namespace posenc::harness
