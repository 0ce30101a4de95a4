// attention: out = softmax(scale·q·kᵀ + bias + mask)·v, per query head, with grouped-query heads.
//
// Shapes: q [tq, hq, d], k [tk, hkv, d], v [tk, hkv, dv], out [tq, hq, dv]; hq is a multiple of
// hkv and query head h reads kv head h / (hq / hkv). bias, if given, is [hq, tq, tk]. scale
// defaults (NaN) to 1/√d. Causal masking hides key j from query i when k_pos[j] > q_pos[i]; without
// explicit positions q_pos[i] = tk − tq + i and k_pos[j] = j (queries are the last tq tokens, as
// when decoding against a KV cache). Softmax subtracts the row maximum.
//
// Sliding window (FlashInfer's window_left, Mistral/Gemma 2 local layers): with window_left = w ≥ 0
// key j is visible to query i only if q_pos[i] − k_pos[j] ≤ w, an inclusive bound: the query and
// the w positions before it, w + 1 in all (Mistral's sliding_window = w + 1, FlashAttention's
// window_size = (w, 0)). The window bounds the past only, as FlashInfer's does; keys after the
// query stay visible unless causal hides them. w = −1 means no window. visible() is the whole rule.
//
// Logit softcap (Gemma 2): with softcap = c > 0 each logit becomes c·tanh(scale·q·k / c), within
// ±c, and then the bias is added, as Hugging Face's Gemma 2 adds its mask and FlashAttention-2
// (vLLM's backend) its ALiBi and mask after the cap: score = c·tanh(scale·q·k / c) + bias. softcap
// = 0 means none. logit() is the rule.
//
// Chunked local attention (Llama 4's attention_chunk_size): with chunk_size = c > 0 key j is
// visible to query i only if ⌊q_pos[i] / c⌋ = ⌊k_pos[j] / c⌋, the rule of Hugging Face's
// masking_utils.chunked_overlay (kv_idx // chunk_size == q_idx // chunk_size, positions counted
// from the sequence's first token): chunks start at positions 0, c, 2c, …, and the key at a
// chunk's first position belongs to that chunk. Llama 4 adds causal on top; alone it is
// bidirectional within the chunk. 0 means no chunking. It composes with the mask and the window
// (all must allow a key); visible() is the whole rule.
//
// Attention sinks (GPT-OSS): sinks, f32 [hq], one logit per query head that joins the softmax's
// denominator only: out = Σ_j e^(s_j − m)·v_j / (e^(sink − m) + Σ_j e^(s_j − m)), m = max(sink,
// max_j s_j). As in Hugging Face's gpt_oss eager_attention_forward, the sink is used as given: not
// scaled, not softcapped, no bias. It is part of the maximum, so a large sink cannot overflow. A
// row with no visible key and a finite sink is zeros; a sink of −∞ is no sink; NaN and +∞ are
// rejected.
//
// Fused ALiBi (FlashInfer's and TensorRT-LLM's alibi_slopes): alibi_slopes, f32 [hq], adds the bias
// of posenc's ALiBi family (alibi.h), slope_h·(−|q_pos[i] − k_pos[j]|), rounded to f32 as that
// family materialises it; for a causal row's visible keys that is −slope_h·(q_pos − k_pos). It is
// added after the softcap, with the bias: score = softcap(scale·q·k) + alibi + bias. Slopes must be
// finite; with implicit positions tk − 1 may not pass 2^24.
//
// A row with no visible key (every key masked, tk = 0, or every bias −∞) is defined as all zeros,
// as FlashAttention returns; NaN inputs propagate as NaN.
//
// Log-sum-exp (optional output lse, f32 [tq, hq]): lse[i, h] = ln Σ_j exp(score_j) over the keys
// row i sees, score_j = softcap(scale·q·k_j) + alibi + bias: the NATURAL log of the softmax
// denominator (FlashAttention's softmax_lse; FlashInfer returns log2 of it, ln(x) = log2(x)·ln 2),
// the sink's e^sink included. It is −∞ for a row with no visible key (and no sink), NaN where a
// visible score is NaN, +∞ where one is +∞. Computed as max_j score_j + ln Σ_j exp(score_j − max),
// once the row's denominator is complete. It is what merges partial results over disjoint key sets
// A and B: l = ln(e^lA + e^lB), out = e^(lA − l)·outA + e^(lB − l)·outB.
//
// Dtypes: q, k, v and out f32, bf16 or f16 alike; bias f32 or the same dtype; sinks and
// alibi_slopes f32.
//
// Tolerance unit: |got − ref| ≤ bound · ulp_f32(vmax) · (1 + |scale|·‖q_i‖·kmax), where vmax is the
// largest |v| in the element's kv head and column and kmax the largest ‖k_j‖ in that head, both
// over the keys row i sees (not masked, bias not −∞): a hidden key cannot change the output, so it
// does not change its unit either (ulp of out's dtype for bf16 and f16, kernel.h).
// lse's unit: |got − ref| ≤ bound · ulp_f32(1 + |scale|·‖q_i‖·kmax + |lse_ref|), f32 whatever the
// activations' dtype, with the implementation's f32 bound (an error δ in every score moves lse by
// at most δ; the row maximum and the final addition round at the magnitude of lse).
#pragma once

#include <cmath>
#include <optional>

#include "posenc/kernel.h"
#include "posenc/tensor.h"

namespace posenc {

enum class Mask : uint8_t { none, causal };
constexpr std::array<const char*, 2> enum_names(Mask) { return {"none", "causal"}; }

namespace variant {
inline constexpr uint64_t attention_causal = kFamilyVariant0 << 0;
inline constexpr uint64_t attention_bias = kFamilyVariant0 << 1;
inline constexpr uint64_t attention_gqa = kFamilyVariant0 << 2;  // hq != hkv
inline constexpr uint64_t attention_positions = kFamilyVariant0 << 3;
inline constexpr uint64_t attention_window = kFamilyVariant0 << 4;   // window_left ≥ 0
inline constexpr uint64_t attention_softcap = kFamilyVariant0 << 5;  // softcap > 0
inline constexpr uint64_t attention_lse = kFamilyVariant0 << 6;      // lse output requested
inline constexpr uint64_t attention_chunked = kFamilyVariant0 << 7;  // chunk_size > 0
inline constexpr uint64_t attention_sinks = kFamilyVariant0 << 8;    // sinks given
inline constexpr uint64_t attention_alibi = kFamilyVariant0 << 9;    // alibi_slopes given
}  // namespace variant

struct AttentionCall {
  static constexpr Family kFamily = Family::attention;

  Tensor q, k, v, out;
  Mask mask = Mask::none;
  std::optional<Tensor> q_positions, k_positions;  // i64 [tq], [tk]; read when positions matter
  std::optional<Tensor> bias;                      // [hq, tq, tk]
  double scale = std::nan("");                     // NaN means 1/√d
  int64_t window_left = -1;   // −1: no window; else q_pos − k_pos ≤ window_left
  double softcap = 0;         // 0: none; else each logit becomes softcap·tanh(logit / softcap)
  std::optional<Tensor> lse;  // output, f32 [tq, hq]: ln of each row's softmax denominator
  int threads = 0;
  int64_t chunk_size = 0;       // 0: none; else ⌊q_pos / chunk_size⌋ = ⌊k_pos / chunk_size⌋
  std::optional<Tensor> sinks;  // f32 [hq]: a logit per query head in the denominator
  std::optional<Tensor> alibi_slopes;  // f32 [hq]: adds slope·(−|q_pos − k_pos|) to the scores

  void validate() const;
  uint64_t required_variants() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<AttentionCall>, 10> view_table() {
    using View = ViewField<AttentionCall>;
    return {{{"q", &AttentionCall::q},
             {"k", &AttentionCall::k},
             {"v", &AttentionCall::v},
             {"q_positions", &AttentionCall::q_positions},
             {"k_positions", &AttentionCall::k_positions},
             {"bias", &AttentionCall::bias},
             {"sinks", &AttentionCall::sinks},
             {"alibi_slopes", &AttentionCall::alibi_slopes},
             {"out", &AttentionCall::out, View::output},
             {"lse", &AttentionCall::lse, View::output}}};
  }
  // Its variant bits by name (kernel.h).
  static constexpr std::array<VariantName, 10> variant_table() {
    return {{{variant::attention_causal, "attention_causal"},
             {variant::attention_bias, "attention_bias"},
             {variant::attention_gqa, "attention_gqa"},
             {variant::attention_positions, "attention_positions"},
             {variant::attention_window, "attention_window"},
             {variant::attention_softcap, "attention_softcap"},
             {variant::attention_lse, "attention_lse"},
             {variant::attention_chunked, "attention_chunked"},
             {variant::attention_sinks, "attention_sinks"},
             {variant::attention_alibi, "attention_alibi"}}};
  }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("mask", call.mask);
    f("scale", call.scale);
    f("window_left", call.window_left);
    f("softcap", call.softcap);
    f("threads", call.threads);
    f("chunk_size", call.chunk_size);
  }
  double resolved_scale() const;
  int64_t q_position(int64_t i) const;  // after validate()
  int64_t k_position(int64_t j) const;
  bool windowed() const { return window_left >= 0; }
  bool chunked() const { return chunk_size > 0; }
  // scale·q·k after the softcap, if any: what the bias is added to.
  double logit(double scaled_dot) const {
    return softcap > 0 ? softcap * std::tanh(scaled_dot / softcap) : scaled_dot;
  }
  // Whether the mask, the window and the chunks let query i see key j (a −∞ bias aside); after
  // validate().
  bool visible(int64_t i, int64_t j) const;
  // The same rule on positions, for kernels that keep their own copies of them.
  bool visible_at(int64_t q_pos, int64_t k_pos) const {
    if (mask == Mask::causal && k_pos > q_pos) return false;
    if (chunk_size > 0 && chunk_of(q_pos) != chunk_of(k_pos)) return false;
    return window_left < 0 || q_pos - k_pos <= window_left;
  }
  // ⌊position / chunk_size⌋ (implicit query positions tk − tq + i are negative when tq > tk).
  int64_t chunk_of(int64_t position) const {
    return position / chunk_size - (position % chunk_size < 0);
  }
  // The fused ALiBi term of query head h, query i and key j (0 without alibi_slopes), rounded to
  // f32 as the ALiBi family's bias; after validate().
  double alibi(int64_t h, int64_t i, int64_t j) const;
  // Query head h's sink logit, −∞ without sinks; after validate().
  double sink(int64_t h) const;
};

}  // namespace posenc
