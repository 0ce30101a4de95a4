// A Hugging Face config.json's rotary embedding as posenc's call parameters, following
// transformers' modeling_rope_utils.py (RotaryEmbeddingConfigMixin.standardize_rope_params, the
// _validate_*_rope_parameters key sets and the _compute_*_parameters readers):
//
//   rope dict     `rope_parameters` or the legacy `rope_scaling` (not both), under `text_config`
//   when
//                 the config has one; `rope_type`, or the legacy `type` ("mrope" is Qwen2-VL's name
//                 for default, "su" and "yarn" Phi-3's for longrope); absent or null means default
//   base          the dict's `rope_theta`, else the config's, else 10000
//   rotary_dim    int(head_dim · partial_rotary_factor); head_dim is `qk_rope_head_dim` (DeepSeek),
//                 else `head_dim`, else hidden_size / num_attention_heads
//   L₀            llama3, yarn, longrope: the config's `original_max_position_embeddings` (Phi-3
//                 keeps it outside the dict), else the dict's, else max_position_embeddings
//   per layer     a dict keyed by layer type (full_attention, sliding_attention), or Gemma 3's
//                 `rope_local_base_freq` (its sliding layers: unscaled at that base); layer types
//                 from `layer_types`, else every `sliding_window_pattern`-th layer is full
//
// Every key of a rope dict is read or rejected: a key its rope_type does not read, a value of the
// wrong JSON type, or two spellings of one parameter that disagree is a posenc::Error naming the
// key, where transformers only logs a warning or silently prefers one.
//
// From C++, as `posenc config` does:
//   const config::ModelRope model = config::read("config.json");
//   const config::LayerRope& rope = model.layer(5);  // std::nullopt when every layer shares one
//   RopeCall call = rope.rope_call();                // then set q, q_out, k, positions
//   auto f = reference::frequencies(rope.rotary_dim, rope.base, rope.scaling);
// `posenc validate --config` pins the properties to these parameters (PinnedRope, properties/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "posenc/rope.h"
#include "posenc/rope_frequencies.h"

namespace posenc::config {

// One layer's rotary embedding.
struct LayerRope {
  std::string layer_type;  // "full_attention", "sliding_attention"; "" when every layer shares it
  std::string source;      // the dict it came from, e.g. "text_config.rope_scaling"
  std::string rope_type;   // as transformers names it: default, linear, dynamic, yarn, ...
  int64_t head_dim = 0;    // the dims of a head the rope sees (DeepSeek: qk_rope_head_dim)
  int64_t rotary_dim = 0;  // the rotated ones
  double partial_rotary_factor = 1;
  RopeLayout layout = RopeLayout::half_split;  // from the model's code (model_type), see .cc
  double base = 10000;
  RopeScaling scaling;
  int64_t max_position_embeddings = 0;  // the config's; 0 when absent
  // M-RoPE: the rotary_dim/2 frequencies split between the (temporal, height, width) position
  // axes, in contiguous sections or cycled (interleaved, Qwen3-VL): MropeCall's mrope_section and
  // convention (posenc/mrope.h); the parameters above are also its 1D rope (equal axes).
  std::vector<int64_t> mrope_section;
  bool mrope_interleaved = false;
  std::vector<std::string> notes;  // facts a kernel needs that live outside the rope call

  // The call's parameters; the caller sets the tensors.
  RopeFrequenciesCall frequencies_call() const;
  RopeCall rope_call() const;
};

struct ModelRope {
  std::string model_type;
  int64_t num_layers = 0;  // 0: the config does not say
  std::vector<LayerRope> ropes;
  std::vector<size_t> layer_rope;  // per layer, its index in ropes; empty when ropes has one

  // Layer n's rope. Throws posenc::Error when n is out of range, or absent while layers differ.
  const LayerRope& layer(std::optional<int64_t> n) const;
};

// `seq_len` is the sequence length dynamic and longrope scalings read (0: transformers' value at
// initialization, before any forward pass: unscaled dynamic, LongRoPE's short factors).
ModelRope parse(std::string_view json_text, int64_t seq_len = 0);
ModelRope read(const std::string& path, int64_t seq_len = 0);  // also Error if unreadable

// `posenc config`'s output for one layer's rope and its frequencies (any rope_frequencies
// implementation's): text for people, or one JSON object
// {"rotary_dim": …, "inv_freq": […], "attention_factor": …, …}.
std::string format_text(const ModelRope& model, const LayerRope& rope, std::optional<int64_t> layer,
                        const std::vector<double>& inv_freq, double attention_factor);
std::string format_json(const ModelRope& model, const LayerRope& rope, std::optional<int64_t> layer,
                        const std::vector<double>& inv_freq, double attention_factor);

}  // namespace posenc::config
