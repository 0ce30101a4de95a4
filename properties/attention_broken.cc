// attention's broken kernels for the self-test (selftest.h), beside its properties
// (properties/attention.cc). Each computes in fp64 and rounds once, like the reference, so that the
// bug is the only thing wrong with it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "posenc/error.h"
#include "properties/harness.h"
#include "properties/selftest.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

enum class AttentionBug {
  ignores_causal_mask,
  ignores_bias,
  skips_key_tail,            // keys in blocks of 8; the last partial block is dropped
  unstable_softmax,          // exp(score) in f32 without subtracting the row maximum
  gqa_wrong_head,            // query head h reads kv head h % hkv instead of h / (hq / hkv)
  split_keys_by_thread,      // each thread's key range is reduced in f32, then combined in f32
  bias_in_activation_dtype,  // reads the bias as if it had q's dtype (a kernel templated on one T)
  weighs_hidden_values,      // a hidden key gets weight 0 instead of being skipped: 0·∞ is NaN
  split_kv_by_thread,        // decode only (tq ≤ 4, tk ≥ 512): one key block per thread, in f32
};

// lse[i, h] from a row's maximum, its sum of exp(score − maximum) and whether a visible score is
// NaN, by the contract's rules (attention.h).
void store_lse(const AttentionCall& call, int64_t i, int64_t h, double top, double total,
               bool nan_row) {
  if (!call.lse) return;
  double lse = top == INFINITY ? top : top + std::log(total);
  if (nan_row) lse = std::nan("");
  store(*call.lse, call.lse->offset(i, h), lse);
}

// split_kv_by_thread's row: the keys in one block per thread (a block size that follows the
// thread count), each block's maximum, sum and p·v in f32, the blocks merged in f32. Finite rows
// only (the property that catches it, attention.threads, needs no more).
void split_kv_row(const AttentionCall& call, int64_t i, int64_t h, const std::vector<double>& score,
                  int threads) {
  const Tensor& v = call.v;
  const int64_t tk = call.k.shape[0], dv = v.shape[2],
                kvh = h / (call.q.shape[1] / call.k.shape[1]);
  const int64_t block = (tk + threads - 1) / threads;
  float top = -INFINITY, total = 0;
  std::vector<float> acc(dv, 0.0f), part(dv);
  for (int64_t j0 = 0; j0 < tk; j0 += block) {
    const int64_t j1 = std::min(tk, j0 + block);
    float m = -INFINITY, l = 0;
    for (int64_t j = j0; j < j1; ++j) m = std::max(m, static_cast<float>(score[j]));
    if (m == -INFINITY) continue;
    std::fill(part.begin(), part.end(), 0.0f);
    for (int64_t j = j0; j < j1; ++j) {
      if (score[j] == -INFINITY) continue;
      const float p = std::exp(static_cast<float>(score[j]) - m);
      l += p;
      for (int64_t c = 0; c < dv; ++c)
        part[c] += p * static_cast<float>(load(v, v.offset(j, kvh, c)));
    }
    const float new_top = std::max(top, m);
    const float old_scale = std::exp(top - new_top), scale = std::exp(m - new_top);
    total = total * old_scale + l * scale;
    for (int64_t c = 0; c < dv; ++c) acc[c] = acc[c] * old_scale + part[c] * scale;
    top = new_top;
  }
  for (int64_t c = 0; c < dv; ++c)
    store(call.out, call.out.offset(i, h, c), total > 0 ? acc[c] / total : 0.0);
  store_lse(call, i, h, top, total, false);
}

void attention_with(AttentionBug bug, const AttentionCall& call) {
  call.validate();
  const Tensor &q = call.q, &k = call.k, &v = call.v, &out = call.out;
  const int64_t tq = q.shape[0], hq = q.shape[1], d = q.shape[2];
  const int64_t tk = k.shape[0], hkv = k.shape[1], group = hq / hkv, dv = v.shape[2];
  const int64_t keys = bug == AttentionBug::skips_key_tail ? tk / 8 * 8 : tk;
  const int threads = resolve_threads(call.threads);
  const int64_t chunk = std::max<int64_t>((keys + threads - 1) / threads, 1);
  std::optional<Tensor> bias = call.bias;
  // An f32 bias under bf16 or f16 activations read as 2-byte elements: within its memory, wrong.
  if (bias && bug == AttentionBug::bias_in_activation_dtype) bias->dtype = q.dtype;
  std::vector<double> score(tk), acc(dv);
  AttentionCall unmasked = call;  // what ignores_causal_mask sees: the window, if any, stays
  unmasked.mask = Mask::none;
  const AttentionCall& seen = bug == AttentionBug::ignores_causal_mask ? unmasked : call;
  const bool split_kv = bug == AttentionBug::split_kv_by_thread && tq <= 4 && tk >= 512;
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t kvh = bug == AttentionBug::gqa_wrong_head ? h % hkv : h / group;
    for (int64_t i = 0; i < tq; ++i) {
      double top = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += load(q, q.offset(i, h, c)) * load(k, k.offset(j, kvh, c));
        score[j] = call.logit(call.resolved_scale() * dot);
        if (bias && bug != AttentionBug::ignores_bias)
          score[j] += load(*bias, bias->offset(h, i, j));
        if (!seen.visible(i, j)) score[j] = -INFINITY;
        top = std::fmax(top, score[j]);
      }
      if (bug == AttentionBug::unstable_softmax) top = 0;
      bool nan_row = false;  // a visible NaN score makes the row NaN, as in the reference
      for (int64_t j = 0; j < keys; ++j) nan_row |= std::isnan(score[j]);
      if (nan_row) {
        for (int64_t c = 0; c < dv; ++c) store(out, out.offset(i, h, c), std::nan(""));
        store_lse(call, i, h, top, 0, true);
        continue;
      }
      if (split_kv) {
        split_kv_row(call, i, h, score, threads);
        continue;
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      double total = 0;
      if (bug == AttentionBug::split_keys_by_thread) {
        // Partial sums per thread's key range, rounded to f32, combined in f32.
        float ftotal = 0;
        std::vector<float> facc(dv, 0.0f);
        for (int64_t start = 0; start < keys; start += chunk) {
          float part = 0;
          std::vector<float> pacc(dv, 0.0f);
          for (int64_t j = start; j < std::min(keys, start + chunk); ++j) {
            if (score[j] == -INFINITY) continue;
            const float w = static_cast<float>(std::exp(score[j] - top));
            part += w;
            for (int64_t c = 0; c < dv; ++c)
              pacc[c] += w * static_cast<float>(load(v, v.offset(j, kvh, c)));
          }
          ftotal += part;
          for (int64_t c = 0; c < dv; ++c) facc[c] += pacc[c];
        }
        total = ftotal;
        for (int64_t c = 0; c < dv; ++c) acc[c] = facc[c];
      } else if (top != -INFINITY) {
        for (int64_t j = 0; j < keys; ++j) {
          if (score[j] == -INFINITY) {
            // As a dense p·V product does: every key is read, a hidden one with p = 0.
            if (bug == AttentionBug::weighs_hidden_values)
              for (int64_t c = 0; c < dv; ++c) acc[c] += 0.0 * load(v, v.offset(j, kvh, c));
            continue;
          }
          const double w = bug == AttentionBug::unstable_softmax
                               ? static_cast<double>(std::exp(static_cast<float>(score[j])))
                               : std::exp(score[j] - top);
          total += w;
          for (int64_t c = 0; c < dv; ++c) acc[c] += w * load(v, v.offset(j, kvh, c));
        }
      }
      for (int64_t c = 0; c < dv; ++c)
        store(out, out.offset(i, h, c), total > 0 || std::isnan(total) ? acc[c] / total : 0.0);
      store_lse(call, i, h, top, total, nan_row);
    }
  }
}

// ---- attention variants (issue 21) ----

enum class AttentionVariantBug {
  window_exclusive,    // hides the key at exactly window_left (q_pos − k_pos < w): sglang#26147
  window_two_sided,    // also hides keys more than window_left after the query (|q − k| ≤ w)
  softcap_ignored,     // the softcap dropped (sglang#33915)
  softcap_unscaled,    // tanh(logit / c), forgetting to multiply back by c
  softcap_after_bias,  // c·tanh((logit + bias) / c): the bias capped too
  chunk_start_exclusive,  // a chunk's keys as (start, start + c): its first position left out
  chunk_one_based,        // chunks of positions counted from 1, ⌊(pos + 1) / c⌋
  sink_dropped,           // the sink ignored (TransformerEngine#3551)
  sink_outside_max,       // the sink seeded into the first key block with that block's maximum
  sink_unguarded,         // e^(sink − max) unguarded: a −∞ sink on a row with no key is NaN
  alibi_before_scale,     // scale·(q·k + alibi): the slope applied before the scale
  alibi_signed,           // slope·(k_pos − q_pos) for every key: later keys gain, not lose
  alibi_slot_distance,    // the distance between slots i + tk − tq and j, not the positions
  lse_base2,        // lse as log2 of the denominator (FlashInfer's convention) where ln is asked
  lse_without_max,  // ln Σ exp(score − max): the row maximum not added back
};

// The reference's arithmetic in fp64 (finite inputs), with the bug's idea of one variant.
void attention_variant_with(AttentionVariantBug bug, const AttentionCall& call) {
  using B = AttentionVariantBug;
  call.validate();
  const Tensor &q = call.q, &k = call.k, &v = call.v, &out = call.out;
  const int64_t tq = q.shape[0], hq = q.shape[1], d = q.shape[2];
  const int64_t tk = k.shape[0], group = hq / k.shape[1], dv = v.shape[2];
  const double cap = call.softcap, w = static_cast<double>(call.window_left);
  const int64_t chunk = call.chunk_size;
  AttentionCall unchunked = call;  // the mask and the window; the chunk as the bug sees it
  unchunked.chunk_size = 0;
  const auto visible = [&](int64_t i, int64_t j) {
    const int64_t qp = call.q_position(i), kp = call.k_position(j), distance = qp - kp;
    if (bug == B::window_exclusive && call.windowed() && distance >= w) return false;
    if (bug == B::window_two_sided && call.windowed() && std::abs(distance) > w) return false;
    if (chunk > 0) {
      const int64_t start = call.chunk_of(qp) * chunk;
      if (bug == B::chunk_start_exclusive && !(kp > start && kp < start + chunk)) return false;
      if (bug == B::chunk_one_based && call.chunk_of(qp + 1) != call.chunk_of(kp + 1)) return false;
      if (bug != B::chunk_start_exclusive && bug != B::chunk_one_based &&
          call.chunk_of(qp) != call.chunk_of(kp))
        return false;
    }
    return unchunked.visible(i, j);
  };
  const auto alibi = [&](int64_t h, int64_t i, int64_t j) {
    if (!call.alibi_slopes) return 0.0;
    const double slope = call.alibi_slopes->as<float>()[call.alibi_slopes->offset(h)];
    int64_t distance = std::abs(call.q_position(i) - call.k_position(j));
    if (bug == B::alibi_signed) distance = call.q_position(i) - call.k_position(j);
    if (bug == B::alibi_slot_distance) distance = std::abs(tk - tq + i - j);
    return static_cast<double>(static_cast<float>(slope * -static_cast<double>(distance)));
  };
  const auto score = [&](double dot, double alibi, double bias) {
    double scaled_dot = call.resolved_scale() * dot;
    if (bug == B::alibi_before_scale) scaled_dot = call.resolved_scale() * (dot + alibi), alibi = 0;
    bias += alibi;
    if (cap == 0 || bug == B::softcap_ignored) return scaled_dot + bias;
    if (bug == B::softcap_unscaled) return std::tanh(scaled_dot / cap) + bias;
    if (bug == B::softcap_after_bias) return cap * std::tanh((scaled_dot + bias) / cap);
    return call.logit(scaled_dot) + bias;
  };
  std::vector<double> s(tk), acc(dv);
  for (int64_t h = 0; h < hq; ++h)
    for (int64_t i = 0; i < tq; ++i) {
      double top = -INFINITY;
      for (int64_t j = 0; j < tk; ++j) {
        s[j] = -INFINITY;
        if (!visible(i, j)) continue;
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += load(q, q.offset(i, h, c)) * load(k, k.offset(j, h / group, c));
        s[j] = score(dot, alibi(h, i, j),
                     call.bias ? load(*call.bias, call.bias->offset(h, i, j)) : 0.0);
        top = std::max(top, s[j]);
      }
      const double sink = bug == B::sink_dropped ? -INFINITY : call.sink(h);
      std::fill(acc.begin(), acc.end(), 0.0);
      double total = 0;
      if (bug == B::sink_outside_max && call.sinks) {
        // Online over blocks of 8 keys; the sink joins block 0's sum as the f32 e^(sink − m₀), m₀
        // that block's own maximum: ∞ past e^88, and ∞·0 = NaN when block 0 shows no key.
        double m = -INFINITY;
        for (int64_t j0 = 0; j0 < tk; j0 += 8) {
          double block_max = -INFINITY;
          for (int64_t j = j0; j < std::min(tk, j0 + 8); ++j) block_max = std::max(block_max, s[j]);
          const double new_max = std::max(m, block_max);
          const double alpha = m == -INFINITY ? 0 : std::exp(m - new_max);
          total *= alpha;
          for (double& a : acc) a *= alpha;
          if (j0 == 0 && sink > -INFINITY) total += static_cast<float>(std::exp(sink - block_max));
          for (int64_t j = j0; j < std::min(tk, j0 + 8); ++j) {
            if (s[j] == -INFINITY) continue;
            const double p = std::exp(s[j] - new_max);
            total += p;
            for (int64_t c = 0; c < dv; ++c) acc[c] += p * load(v, v.offset(j, h / group, c));
          }
          m = new_max;
        }
      } else {
        top = std::max(top, sink);
        // sink_unguarded: whenever a sinks tensor is given, as a kernel's sink branch would.
        if (sink > -INFINITY || (bug == B::sink_unguarded && call.sinks))
          total = std::exp(sink - top);
        for (int64_t j = 0; j < tk && top > -INFINITY; ++j) {
          if (s[j] == -INFINITY) continue;
          const double p = std::exp(s[j] - top);
          total += p;
          for (int64_t c = 0; c < dv; ++c) acc[c] += p * load(v, v.offset(j, h / group, c));
        }
      }
      for (int64_t c = 0; c < dv; ++c)
        store(out, out.offset(i, h, c), total > 0 || std::isnan(total) ? acc[c] / total : 0.0);
      if (!call.lse) continue;
      double lse = top + std::log(total);  // −∞ when no key is visible
      if (bug == B::lse_base2) lse /= std::log(2.0);
      if (bug == B::lse_without_max) lse = std::log(total);
      store(*call.lse, call.lse->offset(i, h), lse);
    }
}

}  // namespace

template <>
std::vector<Broken<AttentionCall>> broken_implementations<AttentionCall>() {
  using B = AttentionBug;
  auto make = [](const char* name, B bug, bool threaded = false) {
    return broken_kernel<AttentionCall>(name, bug, attention_with, 2, threaded);
  };
  std::vector<Broken<AttentionCall>> list = {
      {make("ignores_causal_mask", B::ignores_causal_mask), "ignores the causal mask",
       "attention.causal_not_equivariant"},
      {make("ignores_bias", B::ignores_bias), "ignores the additive (positional) bias",
       "attention.shuffle"},
      {make("skips_key_tail", B::skips_key_tail),
       "SIMD-style key loop that drops the last tk % 8 keys", "attention.permutation_equivariance"},
      {make("unstable_softmax", B::unstable_softmax),
       "softmax in f32 without subtracting the row maximum", "attention.differential"},
      {make("gqa_wrong_head", B::gqa_wrong_head), "query head h reads kv head h % hkv",
       "attention.eigen_oracle"},
      {make("split_keys_by_thread", B::split_keys_by_thread, true),
       "reduces each thread's keys in f32 and combines the partial sums in f32",
       "attention.threads"},
      {make("bias_in_activation_dtype", B::bias_in_activation_dtype),
       "reads an f32 bias as if it had the activations' dtype: wrong only under bf16 or f16",
       "attention.differential"},
      {make("weighs_hidden_values", B::weighs_hidden_values),
       "weighs a masked key by p = 0 instead of skipping it, so an ∞ in an unused KV-cache slot "
       "turns the rows that cannot see it into NaN",
       "attention.differential"},
      {make("split_kv_by_thread", B::split_kv_by_thread, true),
       "decode with a long KV cache only: splits the keys into one block per thread, reduced and "
       "merged in f32, so the bits follow the thread count",
       "attention.threads"},
  };
  using V = AttentionVariantBug;
  auto make_variant = [](const char* name, V bug) {
    return broken_kernel<AttentionCall>(name, bug, attention_variant_with, 2, false);
  };
  list.push_back({make_variant("window_exclusive", V::window_exclusive),
                  "treats window_left as exclusive: hides the key exactly window_left back",
                  "attention.window_covering_all"});
  list.push_back({make_variant("window_two_sided", V::window_two_sided),
                  "applies window_left to later keys too (|q_pos − k_pos| ≤ window_left)",
                  "attention.differential"});
  list.push_back({make_variant("softcap_ignored", V::softcap_ignored), "drops the logit softcap",
                  "attention.softcap_bounds_logits"});
  list.push_back({make_variant("softcap_unscaled", V::softcap_unscaled),
                  "caps the logits as tanh(logit / c), forgetting the factor c",
                  "attention.softcap_infinite"});
  list.push_back({make_variant("softcap_after_bias", V::softcap_after_bias),
                  "caps the logit plus the bias, c·tanh((logit + bias) / c)",
                  "attention.differential"});
  list.push_back({make_variant("chunk_start_exclusive", V::chunk_start_exclusive),
                  "leaves a chunk's first position out of it (k_pos > chunk start)",
                  "attention.chunk_is_local"});
  list.push_back({make_variant("chunk_one_based", V::chunk_one_based),
                  "counts positions from 1 when cutting chunks, ⌊(pos + 1) / chunk_size⌋",
                  "attention.chunk_covering_all"});
  list.push_back({make_variant("sink_dropped", V::sink_dropped),
                  "drops the sink logit (TransformerEngine#3551)", "attention.sink_is_extra_key"});
  list.push_back(
      {make_variant("sink_outside_max", V::sink_outside_max),
       "adds e^(sink − m₀) to the first key block's sum, m₀ that block's maximum without "
       "the sink (sgl-kernel-npu#216): ∞ in f32 past e^88, and NaN when that block is "
       "masked",
       "attention.sink_is_extra_key"});
  list.push_back({make_variant("sink_unguarded", V::sink_unguarded),
                  "computes e^(sink − max) for a −∞ sink too: NaN on a row with no visible key "
                  "(flash-attention#2752)",
                  "attention.sink_minus_infinity"});
  list.push_back({make_variant("alibi_before_scale", V::alibi_before_scale),
                  "adds the ALiBi term before the scale, scale·(q·k + alibi)",
                  "attention.alibi_fused"});
  list.push_back({make_variant("alibi_signed", V::alibi_signed),
                  "uses slope·(k_pos − q_pos) for every key, so keys after the query gain",
                  "attention.alibi_fused"});
  list.push_back({make_variant("alibi_slot_distance", V::alibi_slot_distance),
                  "measures the ALiBi distance between slots, not positions (contiguous positions "
                  "assumed)",
                  "attention.key_permutation"});
  list.push_back({make_variant("lse_base2", V::lse_base2),
                  "returns log2 of the softmax denominator as lse, which the contract asks in ln",
                  "attention.lse_merge"});
  list.push_back({make_variant("lse_without_max", V::lse_without_max),
                  "returns ln Σ exp(score − max) as lse, forgetting to add the row maximum back",
                  "attention.lse_merge"});
  add_generic(list, "attention");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<AttentionCall>() {
  return {};
}

}  // namespace posenc::harness
