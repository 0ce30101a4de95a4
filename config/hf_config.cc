#include "config/hf_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "posenc/error.h"

namespace posenc::config {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& argument, const json& value,
                       const std::string& requirement) {
  throw Error(argument, value.dump(), requirement);
}

// A JSON object whose fields are read by name: absent and null read alike (transformers' dict.get).
class Object {
 public:
  Object(const json& object, std::string name) : object_(object), name_(std::move(name)) {
    if (!object_.is_object()) fail(name_, object_, "must be a JSON object");
  }

  const std::string& name() const { return name_; }
  std::string path(const std::string& key) const { return name_ + "." + key; }
  bool has(const std::string& key) const { return get(key) != nullptr; }

  const json* get(const std::string& key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<double> number(const std::string& key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(path(key), *v, "must be a number");
    return v->get<double>();
  }
  std::optional<int64_t> integer(const std::string& key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) fail(path(key), *v, "must be an integer");
    return v->get<int64_t>();
  }
  std::optional<bool> boolean(const std::string& key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(path(key), *v, "must be true or false");
    return v->get<bool>();
  }
  std::optional<std::string> string(const std::string& key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(path(key), *v, "must be a string");
    return v->get<std::string>();
  }
  std::vector<double> numbers(const std::string& key) const {
    const json* v = get(key);
    if (!v) return {};
    if (!v->is_array()) fail(path(key), *v, "must be an array of numbers");
    std::vector<double> out;
    for (const json& x : *v) {
      if (!x.is_number()) fail(path(key), *v, "must be an array of numbers");
      out.push_back(x.get<double>());
    }
    return out;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (auto it = object_.begin(); it != object_.end(); ++it) out.push_back(it.key());
    return out;
  }
  const json& raw() const { return object_; }

 private:
  const json& object_;
  std::string name_;
};

// The keys each rope_type reads: transformers' _validate_<type>_rope_parameters required and
// optional keys, plus what every dict may carry (rope_theta, partial_rotary_factor, the legacy
// `type`) and the M-RoPE keys the Qwen-VL configs exclude from that check (ignore_keys).
const std::map<std::string, std::set<std::string>>& keys_by_type() {
  static const std::map<std::string, std::set<std::string>> keys = {
      {"default", {}},
      {"linear", {"factor"}},
      {"dynamic", {"factor"}},
      {"yarn",
       {"factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
        "mscale", "mscale_all_dim", "truncate"}},
      {"longrope",
       {"short_factor", "long_factor", "original_max_position_embeddings", "attention_factor",
        "factor"}},
      {"llama3",
       {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"}},
  };
  return keys;
}
const std::set<std::string> kCommonKeys = {"rope_type",     "type",
                                           "rope_theta",    "partial_rotary_factor",
                                           "mrope_section", "mrope_interleaved"};

// Keys every rope_type requires beyond rope_type (transformers raises KeyError without them).
const std::map<std::string, std::set<std::string>> kRequired = {
    {"linear", {"factor"}},
    {"dynamic", {"factor"}},
    {"yarn", {"factor"}},
    {"longrope", {"short_factor", "long_factor"}},
    {"llama3", {"factor", "low_freq_factor", "high_freq_factor"}},
};

std::string join(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s.append(s.empty() ? "" : ", ").append(n);
  return s;
}

// The pair layout is in the model's code, not its config: transformers' modeling_glm (and glm4)
// rotate interleaved pairs, and DeepSeek-V3 applies apply_rotary_pos_emb_interleave unless its
// config sets rope_interleave false. Every other model type here rotates half-split pairs.
RopeLayout layout_of(const std::string& model_type, const Object& text) {
  if (model_type == "glm" || model_type == "glm4") return RopeLayout::interleaved;
  if (model_type == "deepseek_v3" && text.boolean("rope_interleave").value_or(true))
    return RopeLayout::interleaved;
  return RopeLayout::half_split;
}

// One value given under two names (the config's and the rope dict's) must agree.
template <class T>
std::optional<T> agreed(std::optional<T> outer, const std::string& outer_name,
                        std::optional<T> inner, const std::string& inner_name) {
  if (outer && inner && *outer != *inner)
    fail(inner_name, json(*inner),
         "disagrees with " + outer_name + " = " + json(*outer).dump() +
             " (transformers would silently prefer one)");
  return outer ? outer : inner;
}

// Bounds layer counts and section sizes, which size vectors: a config cannot make us allocate
// without limit (real models have thousands of layers at most).
constexpr int64_t kMaxCount = int64_t{1} << 20;

struct Context {
  const Object& text;
  std::string model_type;
  int64_t seq_len;
};

LayerRope parse_dict(const Context& c, const Object& dict, std::string layer_type,
                     std::optional<double> base_default) {
  LayerRope r;
  r.layer_type = std::move(layer_type);
  r.source = dict.name();

  const auto rope_type = dict.string("rope_type");
  const auto legacy_type = dict.string("type");
  // Qwen2-VL's legacy "mrope" is M-RoPE over default frequencies.
  const auto legacy = legacy_type == "mrope" ? std::optional<std::string>("default") : legacy_type;
  if (rope_type && legacy && *rope_type != *legacy)
    fail(dict.path("type"), json(*legacy_type),
         "disagrees with " + dict.path("rope_type") + " = \"" + *rope_type +
             "\" (transformers versions differ on which wins)");
  r.rope_type = rope_type ? *rope_type : legacy ? *legacy : "default";
  // Phi-3's config renames its legacy types (Phi3Config._rope_scaling_adjustment).
  if (c.model_type == "phi3" && !rope_type && (r.rope_type == "su" || r.rope_type == "yarn"))
    r.rope_type = "longrope";

  const auto known = keys_by_type().find(r.rope_type);
  if (known == keys_by_type().end()) {
    std::set<std::string> types;
    for (const auto& [name, keys] : keys_by_type()) types.insert(name);
    fail(dict.path(rope_type ? "rope_type" : "type"), json(r.rope_type),
         "is not a rope type posenc models (" + join(types) + ")");
  }
  const std::set<std::string>& allowed = known->second;
  for (const std::string& key : dict.keys())
    if (!allowed.count(key) && !kCommonKeys.count(key))
      fail(dict.path(key), dict.raw()[key],
           "is not read by rope_type '" + r.rope_type +
               "' (transformers reads: " + (allowed.empty() ? "no scaling key" : join(allowed)) +
               "): an unknown or unused key is an error");
  if (auto required = kRequired.find(r.rope_type); required != kRequired.end())
    for (const std::string& key : required->second)
      if (!dict.raw().contains(key))
        fail(dict.path(key), json("(absent)"), "is required by rope_type '" + r.rope_type + "'");

  // Base, rotary dim, M-RoPE sections.
  r.base = dict.number("rope_theta").value_or(base_default.value_or(10000.0));
  const auto prf =
      agreed(c.text.number("partial_rotary_factor"), c.text.path("partial_rotary_factor"),
             dict.number("partial_rotary_factor"), dict.path("partial_rotary_factor"));
  r.partial_rotary_factor = prf.value_or(1.0);
  if (!(r.partial_rotary_factor > 0 && r.partial_rotary_factor <= 1))
    fail(dict.path("partial_rotary_factor"), json(r.partial_rotary_factor), "must be in (0, 1]");
  if (auto rope_head = c.text.integer("qk_rope_head_dim")) {
    r.head_dim = *rope_head;  // DeepSeek's config sets head_dim = qk_rope_head_dim
  } else if (auto head_dim = c.text.integer("head_dim")) {
    r.head_dim = *head_dim;
  } else {
    const auto hidden = c.text.integer("hidden_size");
    const auto heads = c.text.integer("num_attention_heads");
    if (!hidden || !heads || *hidden <= 0 || *heads <= 0)
      fail(c.text.path("head_dim"), json("(absent)"),
           "is needed, or hidden_size and num_attention_heads > 0");
    r.head_dim = *hidden / *heads;
  }
  if (r.head_dim <= 0 || r.head_dim > kMaxCount)
    fail(c.text.path("head_dim"), json(r.head_dim), "must be in [1, 2^20]");
  r.rotary_dim = static_cast<int64_t>(static_cast<double>(r.head_dim) * r.partial_rotary_factor);
  if (const json* section = dict.get("mrope_section")) {
    if (!section->is_array()) fail(dict.path("mrope_section"), *section, "must be an array");
    for (const json& s : *section) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0 || s.get<int64_t>() > kMaxCount)
        fail(dict.path("mrope_section"), *section, "must be integers in [0, 2^20]");
      r.mrope_section.push_back(s.get<int64_t>());
    }
  }
  r.mrope_interleaved = dict.boolean("mrope_interleaved").value_or(false);
  r.layout = layout_of(c.model_type, c.text);

  // The scaling.
  const auto max_position = c.text.integer("max_position_embeddings");
  r.max_position_embeddings = max_position.value_or(0);
  auto need_max_position = [&](const std::string& why) {
    if (!max_position)
      fail(c.text.path("max_position_embeddings"), json("(absent)"), "is needed: " + why);
    return *max_position;
  };
  auto original = [&] {
    const auto outer = c.text.integer("original_max_position_embeddings");
    const auto inner = dict.integer("original_max_position_embeddings");
    const auto both = agreed(outer, c.text.path("original_max_position_embeddings"), inner,
                             dict.path("original_max_position_embeddings"));
    return both ? *both : need_max_position("original_max_position_embeddings defaults to it");
  };
  RopeScaling& s = r.scaling;
  s.seq_len = c.seq_len;
  if (r.rope_type == "default") {
    s.kind = RopeScalingKind::none;
  } else if (r.rope_type == "linear") {
    s.kind = RopeScalingKind::linear;
    s.factor = dict.number("factor").value_or(NAN);
  } else if (r.rope_type == "dynamic") {
    s.kind = RopeScalingKind::dynamic_ntk;
    s.factor = dict.number("factor").value_or(NAN);
    s.max_position = need_max_position("dynamic scales by seq_len / max_position_embeddings");
  } else if (r.rope_type == "yarn") {
    s.kind = RopeScalingKind::yarn;
    s.original_max_position = original();
    // A null factor is derived from the two context lengths (transformers, for DeepSeek-V3).
    const auto factor = dict.number("factor");
    s.factor = factor ? *factor
                      : static_cast<double>(need_max_position("a null yarn factor is derived")) /
                            static_cast<double>(s.original_max_position);
    s.attention_factor = dict.number("attention_factor").value_or(NAN);
    // transformers reads `get("beta_fast") or 32`: 0 and null both mean the default, and
    // mscale/mscale_all_dim count only when both are nonzero, which RopeScaling's 0 (unset) keeps.
    s.beta_fast = dict.number("beta_fast").value_or(0) != 0 ? *dict.number("beta_fast") : 32.0;
    s.beta_slow = dict.number("beta_slow").value_or(0) != 0 ? *dict.number("beta_slow") : 1.0;
    s.mscale = dict.number("mscale").value_or(0);
    s.mscale_all_dim = dict.number("mscale_all_dim").value_or(0);
    s.truncate = dict.boolean("truncate").value_or(true);
    if ((c.model_type == "deepseek_v3" || c.model_type == "deepseek_v2") && s.mscale_all_dim != 0) {
      // DeepseekV3Attention: scaling *= yarn_get_mscale(factor, mscale_all_dim)², 1 for f <= 1.
      const double m = s.factor <= 1 ? 1.0 : 0.1 * s.mscale_all_dim * std::log(s.factor) + 1.0;
      char text[200];
      std::snprintf(text, sizeof text,
                    "DeepSeek's attention also multiplies its softmax scale by "
                    "g(factor, mscale_all_dim)^2 = %.17g, outside the rope",
                    m * m);
      r.notes.push_back(text);
    }
  } else if (r.rope_type == "longrope") {
    s.kind = RopeScalingKind::longrope;
    s.original_max_position = original();
    const auto factor = dict.number("factor");
    s.factor = factor ? *factor
                      : static_cast<double>(need_max_position("a missing longrope factor is "
                                                              "max_position_embeddings / L0")) /
                            static_cast<double>(s.original_max_position);
    s.attention_factor = dict.number("attention_factor").value_or(NAN);
    s.short_factor = dict.numbers("short_factor");
    s.long_factor = dict.numbers("long_factor");
  } else if (r.rope_type == "llama3") {
    s.kind = RopeScalingKind::llama3;
    s.original_max_position = original();
    s.factor = dict.number("factor").value_or(NAN);
    s.low_freq_factor = dict.number("low_freq_factor").value_or(NAN);
    s.high_freq_factor = dict.number("high_freq_factor").value_or(NAN);
  }
  if (!r.mrope_section.empty()) {
    int64_t sum = 0;
    for (int64_t n : r.mrope_section) sum += n;
    if (sum != r.rotary_dim / 2)
      r.notes.push_back("mrope_section sums to " + std::to_string(sum) +
                        ", not rotary_dim/2 = " + std::to_string(r.rotary_dim / 2));
  }
  try {
    s.validate(r.rotary_dim, r.base);
  } catch (const Error& e) {
    throw Error(dict.name() + ": " + e.argument(), e.value(), e.requirement());
  }
  return r;
}

// Layer types: `layer_types`, else Gemma's rule (every pattern-th layer full, the rest sliding).
std::vector<std::string> layer_types(const Object& text) {
  std::vector<std::string> types;
  if (const json* list = text.get("layer_types")) {
    if (!list->is_array()) fail(text.path("layer_types"), *list, "must be an array of strings");
    if (list->empty() || static_cast<int64_t>(list->size()) > kMaxCount)
      fail(text.path("layer_types"), json(list->size()), "must have 1 to 2^20 layers");
    for (const json& t : *list) {
      if (!t.is_string()) fail(text.path("layer_types"), *list, "must be an array of strings");
      types.push_back(t.get<std::string>());
    }
    return types;
  }
  const auto layers = text.integer("num_hidden_layers");
  const auto pattern =
      agreed(text.integer("sliding_window_pattern"), text.path("sliding_window_pattern"),
             text.integer("_sliding_window_pattern"), text.path("_sliding_window_pattern"));
  if (!layers || *layers <= 0 || *layers > kMaxCount)
    fail(text.path("num_hidden_layers"), layers ? json(*layers) : json("(absent)"),
         "is needed, in [1, 2^20], to assign each layer its rope");
  if (pattern && *pattern <= 0) fail(text.path("sliding_window_pattern"), json(*pattern), "> 0");
  for (int64_t i = 0; i < *layers; ++i)
    types.push_back((i + 1) % pattern.value_or(6) ? "sliding_attention" : "full_attention");
  return types;
}

ModelRope parse_json(const json& root_json, int64_t seq_len) {
  POSENC_REQUIRE(seq_len >= 0, "seq_len", static_cast<double>(seq_len), "must be >= 0");
  const Object root(root_json, "config");
  const json* text_json = root.get("text_config");
  const Object text(text_json ? *text_json : root_json, text_json ? "text_config" : "config");
  const std::string prefix = text_json ? "text_config." : "";

  // With a text_config the text model's rope is there; the same keys at the root must not say
  // something else (or say it alone), since nothing would read them.
  if (text_json)
    for (const char* key :
         {"rope_parameters", "rope_scaling", "rope_theta", "partial_rotary_factor",
          "rope_local_base_freq", "original_max_position_embeddings"})
      if (const json* outer = root.get(key); outer && (!text.get(key) || *text.get(key) != *outer))
        fail(root.path(key), *outer,
             "is not read: the text model's rope is in text_config, which has " +
                 (text.get(key) ? text.get(key)->dump() : std::string("none")));

  ModelRope m;
  m.model_type = text.string("model_type").value_or(root.string("model_type").value_or(""));
  if (auto layers = text.integer("num_hidden_layers")) m.num_layers = *layers;
  const Context c{text, m.model_type, seq_len};

  const bool has_parameters = text.has("rope_parameters"), has_scaling = text.has("rope_scaling");
  if (has_parameters && has_scaling)
    fail(prefix + "rope_scaling", text.raw()["rope_scaling"],
         "and rope_parameters are both set: give one (transformers would drop rope_parameters)");
  const std::string dict_name = prefix + (has_parameters ? "rope_parameters" : "rope_scaling");
  static const json kEmpty = json::object();
  const json& dict_json = has_parameters ? text.raw()["rope_parameters"]
                                         : (has_scaling ? text.raw()["rope_scaling"] : kEmpty);
  const Object dict(dict_json, dict_name);
  const auto theta = text.number("rope_theta");
  const auto local_theta = text.number("rope_local_base_freq");

  // A dict of dicts keyed by layer type (transformers' per-layer form).
  const std::set<std::string> kLayerTypes = {"full_attention", "sliding_attention"};
  std::vector<std::string> keys = dict.keys();
  const bool nested = !keys.empty() && std::all_of(keys.begin(), keys.end(), [&](auto& k) {
    return kLayerTypes.count(k) && dict.raw()[k].is_object();
  });

  if (!nested && !local_theta) {
    m.ropes.push_back(parse_dict(c, dict, "", theta));
    if (auto inner = dict.number("rope_theta"))
      agreed(theta, text.path("rope_theta"), inner, dict.path("rope_theta"));
    return m;
  }
  const std::vector<std::string> types = layer_types(text);
  m.num_layers = static_cast<int64_t>(types.size());
  for (const std::string& type : types) {
    if (!kLayerTypes.count(type))
      fail(text.path("layer_types"), json(type), "is not full_attention or sliding_attention");
    auto found = std::find_if(m.ropes.begin(), m.ropes.end(),
                              [&](const LayerRope& r) { return r.layer_type == type; });
    if (found == m.ropes.end()) {
      const bool sliding = type == "sliding_attention";
      if (nested) {
        if (!dict.raw().contains(type))
          fail(dict.path(type), json("(absent)"), "is needed: layer_types has " + type);
        const Object layer_dict(dict.raw()[type], dict.path(type));
        m.ropes.push_back(
            parse_dict(c, layer_dict, type, sliding && local_theta ? local_theta : theta));
      } else if (sliding) {
        // Gemma 3: sliding layers run unscaled at rope_local_base_freq.
        const Object none(kEmpty, prefix + "rope_local_base_freq");
        m.ropes.push_back(parse_dict(c, none, type, local_theta));
      } else {
        m.ropes.push_back(parse_dict(c, dict, type, theta));
      }
      found = m.ropes.end() - 1;
    }
    m.layer_rope.push_back(static_cast<size_t>(found - m.ropes.begin()));
  }
  if (nested)
    for (const std::string& k : keys)
      if (std::find(types.begin(), types.end(), k) == types.end())
        fail(dict.path(k), dict.raw()[k], "is the rope of no layer (layer_types)");
  if (m.ropes.size() == 1) m.layer_rope.clear();
  return m;
}

}  // namespace

RopeFrequenciesCall LayerRope::frequencies_call() const {
  RopeFrequenciesCall call;
  call.rotary_dim = rotary_dim;
  call.base = base;
  call.scaling = scaling;
  return call;
}

RopeCall LayerRope::rope_call() const {
  RopeCall call;
  call.rotary_dim = rotary_dim;
  call.layout = layout;
  call.base = base;
  call.scaling = scaling;
  return call;
}

const LayerRope& ModelRope::layer(std::optional<int64_t> n) const {
  if (n) {
    POSENC_REQUIRE(*n >= 0 && (num_layers == 0 || *n < num_layers), "layer",
                   static_cast<double>(*n),
                   "must be in [0, num_hidden_layers = " + std::to_string(num_layers) + ")");
  }
  if (layer_rope.empty()) return ropes.front();
  if (!n) {
    std::string types;
    for (const LayerRope& r : ropes) {
      std::string layers;
      for (size_t i = 0; i < layer_rope.size(); ++i)
        if (&ropes[layer_rope[i]] == &r)
          layers.append(layers.empty() ? "" : ",").append(std::to_string(i));
      types.append(types.empty() ? "" : "; ")
          .append(r.layer_type)
          .append(" on layers ")
          .append(layers);
    }
    throw Error("layer", "(none)", "is needed: this model's layers differ (" + types + ")");
  }
  return ropes[layer_rope[static_cast<size_t>(*n)]];
}

ModelRope parse(std::string_view json_text, int64_t seq_len) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw Error("config", "(text)", std::string("is not JSON: ") + e.what());
  }
  return parse_json(root, seq_len);
}

ModelRope read(const std::string& path, int64_t seq_len) {
  std::ifstream in(path);
  if (!in) throw Error("config", path, "cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), seq_len);
}

}  // namespace posenc::config
