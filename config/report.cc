// `posenc config`'s two outputs. Doubles are printed to round-trip (17 significant digits in text;
// nlohmann's shortest round-trip form in JSON).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "config/hf_config.h"

namespace posenc::config {

namespace {

using json = nlohmann::ordered_json;

json optional_number(double x) { return std::isnan(x) ? json(nullptr) : json(x); }

json scaling_json(const RopeScaling& s) {
  json j = {{"kind", scaling_name(s.kind)}};
  switch (s.kind) {
    case RopeScalingKind::none:
      break;
    case RopeScalingKind::linear:
      j["factor"] = s.factor;
      break;
    case RopeScalingKind::ntk:
      j["alpha"] = s.alpha;
      break;
    case RopeScalingKind::dynamic_ntk:
      j["factor"] = s.factor;
      j["max_position"] = s.max_position;
      j["seq_len"] = s.seq_len;
      break;
    case RopeScalingKind::yarn:
      j["factor"] = s.factor;
      j["original_max_position"] = s.original_max_position;
      j["beta_fast"] = s.beta_fast;
      j["beta_slow"] = s.beta_slow;
      j["mscale"] = s.mscale;
      j["mscale_all_dim"] = s.mscale_all_dim;
      j["truncate"] = s.truncate;
      break;
    case RopeScalingKind::llama3:
      j["factor"] = s.factor;
      j["low_freq_factor"] = s.low_freq_factor;
      j["high_freq_factor"] = s.high_freq_factor;
      j["original_max_position"] = s.original_max_position;
      break;
    case RopeScalingKind::longrope:
      j["factor"] = s.factor;
      j["original_max_position"] = s.original_max_position;
      j["seq_len"] = s.seq_len;
      j["factors_in_use"] = s.seq_len > s.original_max_position ? "long" : "short";
      j["short_factor"] = s.short_factor;
      j["long_factor"] = s.long_factor;
      break;
  }
  if (s.kind == RopeScalingKind::yarn || s.kind == RopeScalingKind::longrope)
    j["attention_factor"] = optional_number(s.attention_factor);  // the explicit one, or null
  return j;
}

std::string layer_text(const LayerRope& rope, std::optional<int64_t> layer) {
  std::string s = layer ? "layer " + std::to_string(*layer) : "every layer";
  if (!rope.layer_type.empty()) s += " (" + rope.layer_type + ")";
  return s;
}

}  // namespace

std::string format_json(const ModelRope& model, const LayerRope& rope, std::optional<int64_t> layer,
                        const std::vector<double>& inv_freq, double attention_factor) {
  json j = {
      {"model_type", model.model_type},
      {"layer", layer ? json(*layer) : json(nullptr)},
      {"layer_type", rope.layer_type},
      {"source", rope.source},
      {"rope_type", rope.rope_type},
      {"head_dim", rope.head_dim},
      {"rotary_dim", rope.rotary_dim},
      {"partial_rotary_factor", rope.partial_rotary_factor},
      {"layout", layout_name(rope.layout)},
      {"base", rope.base},
      {"scaling", scaling_json(rope.scaling)},
      {"mrope_section", rope.mrope_section},
      {"mrope_interleaved", rope.mrope_interleaved},
      {"inv_freq", inv_freq},
      {"attention_factor", attention_factor},
      {"notes", rope.notes},
  };
  return j.dump(1) + "\n";
}

std::string format_text(const ModelRope& model, const LayerRope& rope, std::optional<int64_t> layer,
                        const std::vector<double>& inv_freq, double attention_factor) {
  char line[256];
  std::string s;
  auto add = [&](const char* name, const std::string& value) {
    std::snprintf(line, sizeof line, "%-18s %s\n", name, value.c_str());
    s += line;
  };
  auto number = [&](double x) {
    std::snprintf(line, sizeof line, "%.17g", x);
    return std::string(line);
  };
  add("model_type", model.model_type.empty() ? "(not given)" : model.model_type);
  add("rope of", layer_text(rope, layer) + ", from " + rope.source);
  add("rope_type", rope.rope_type + " -> scaling " + rope.scaling.describe());
  add("head_dim", std::to_string(rope.head_dim) + " (rotary_dim " +
                      std::to_string(rope.rotary_dim) + ", partial_rotary_factor " +
                      number(rope.partial_rotary_factor) + ")");
  add("layout", layout_name(rope.layout));
  add("base", number(rope.base));
  if (!rope.mrope_section.empty()) {
    std::string sections;
    for (int64_t n : rope.mrope_section)
      sections.append(sections.empty() ? "" : ", ").append(std::to_string(n));
    add("mrope_section", "[" + sections + "] " +
                             (rope.mrope_interleaved ? "interleaved" : "sectioned") +
                             " (parsed; posenc has no M-RoPE kernel yet)");
  }
  add("attention_factor", number(attention_factor));
  for (const std::string& note : rope.notes) add("note", note);
  std::snprintf(line, sizeof line, "inv_freq (%zu = rotary_dim/2):\n", inv_freq.size());
  s += line;
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    std::snprintf(line, sizeof line, "  %4zu  %.17g\n", i, inv_freq[i]);
    s += line;
  }
  return s;
}

}  // namespace posenc::config
