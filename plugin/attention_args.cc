// attention's C arguments (posenc_attention_args, posenc/plugin/attention.h): its views by their
// view-table names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/attention.h"

namespace posenc::plugin {

// The C spelling of its variant bits and enums.
static_assert(POSENC_VARIANT_ATTENTION_CAUSAL == variant::attention_causal &&
              POSENC_VARIANT_ATTENTION_BIAS == variant::attention_bias &&
              POSENC_VARIANT_ATTENTION_GQA == variant::attention_gqa &&
              POSENC_VARIANT_ATTENTION_POSITIONS == variant::attention_positions &&
              POSENC_VARIANT_ATTENTION_WINDOW == variant::attention_window &&
              POSENC_VARIANT_ATTENTION_SOFTCAP == variant::attention_softcap &&
              POSENC_VARIANT_ATTENTION_LSE == variant::attention_lse &&
              POSENC_VARIANT_ATTENTION_CHUNKED == variant::attention_chunked &&
              POSENC_VARIANT_ATTENTION_SINKS == variant::attention_sinks &&
              POSENC_VARIANT_ATTENTION_ALIBI == variant::attention_alibi);
static_assert(POSENC_MASK_NONE == static_cast<int>(Mask::none) &&
              POSENC_MASK_CAUSAL == static_cast<int>(Mask::causal));

const void* c_args(AttentionCall& c, Tensors& t) {
  return t.block().put(posenc_attention_args{.q = t(c.q),
                                             .k = t(c.k),
                                             .v = t(c.v),
                                             .out = t(c.out),
                                             .mask = static_cast<int32_t>(c.mask),
                                             .q_positions = t(c.q_positions),
                                             .k_positions = t(c.k_positions),
                                             .bias = t(c.bias),
                                             .scale = c.scale,
                                             .window_left = c.window_left,
                                             .softcap = c.softcap,
                                             .threads = c.threads,
                                             .lse = t(c.lse),
                                             .chunk_size = c.chunk_size,
                                             .sinks = t(c.sinks),
                                             .alibi_slopes = t(c.alibi_slopes)});
}

}  // namespace posenc::plugin
