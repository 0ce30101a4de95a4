// Each family's Call struct field by field, as Python sees it: keyword arguments and the arguments
// handed to a checked callable carry these names (include/posenc/<family>.h). fields(call, visit)
// calls visit(name, member, role) in declaration order.
#pragma once

#include "posenc/registry.h"

namespace posenc::python {

enum class Role { input, output, scalar };
inline constexpr Role in = Role::input, out = Role::output, scalar = Role::scalar;

template <class V>
void fields(AttentionCall& c, V&& v) {
  v("q", c.q, in);
  v("k", c.k, in);
  v("v", c.v, in);
  v("out", c.out, out);
  v("mask", c.mask, scalar);
  v("q_positions", c.q_positions, in);
  v("k_positions", c.k_positions, in);
  v("bias", c.bias, in);
  v("scale", c.scale, scalar);
  v("window_left", c.window_left, scalar);
  v("softcap", c.softcap, scalar);
  v("lse", c.lse, out);
  v("threads", c.threads, scalar);
  v("chunk_size", c.chunk_size, scalar);
  v("sinks", c.sinks, in);
  v("alibi_slopes", c.alibi_slopes, in);
}
template <class V>
void fields(AbsoluteCall& c, V&& v) {
  v("x", c.x, in);
  v("table", c.table, in);
  v("positions", c.positions, in);
  v("out", c.out, out);
  v("threads", c.threads, scalar);
}
template <class V>
void fields(SinusoidalCall& c, V&& v) {
  v("out", c.out, out);
  v("x", c.x, in);
  v("positions", c.positions, in);
  v("base", c.base, scalar);
  v("threads", c.threads, scalar);
}
template <class V>
void fields(RopeFrequenciesCall& c, V&& v) {
  v("rotary_dim", c.rotary_dim, scalar);
  v("base", c.base, scalar);
  v("scaling", c.scaling, scalar);
  v("inv_freq", c.inv_freq, out);
  v("attention_factor", c.attention_factor, out);
  v("threads", c.threads, scalar);
}
template <class V>
void fields(RopeCacheCall& c, V&& v) {
  v("rotary_dim", c.rotary_dim, scalar);
  v("base", c.base, scalar);
  v("scaling", c.scaling, scalar);
  v("cos", c.cos, out);
  v("sin", c.sin, out);
  v("threads", c.threads, scalar);
}
template <class V>
void fields(RopeCall& c, V&& v) {
  v("q", c.q, in);
  v("q_out", c.q_out, out);
  v("k", c.k, in);
  v("k_out", c.k_out, out);
  v("positions", c.positions, in);
  v("rotary_dim", c.rotary_dim, scalar);
  v("layout", c.layout, scalar);
  v("inverse", c.inverse, scalar);
  v("base", c.base, scalar);
  v("scaling", c.scaling, scalar);
  v("cos", c.cos, in);
  v("sin", c.sin, in);
  v("threads", c.threads, scalar);
}
template <class V>
void fields(AlibiCall& c, V&& v) {
  v("n_heads", c.n_heads, scalar);
  v("max_bias", c.max_bias, scalar);
  v("causal", c.causal, scalar);
  v("q_positions", c.q_positions, in);
  v("k_positions", c.k_positions, in);
  v("bias", c.bias, out);
  v("slopes", c.slopes, out);
  v("threads", c.threads, scalar);
}
template <class V>
void fields(T5Call& c, V&& v) {
  v("bidirectional", c.bidirectional, scalar);
  v("n_buckets", c.n_buckets, scalar);
  v("max_distance", c.max_distance, scalar);
  v("q_positions", c.q_positions, in);
  v("k_positions", c.k_positions, in);
  v("table", c.table, in);
  v("bias", c.bias, out);
  v("threads", c.threads, scalar);
}
template <class V>
void fields(MropeCall& c, V&& v) {
  v("q", c.q, in);
  v("q_out", c.q_out, out);
  v("k", c.k, in);
  v("k_out", c.k_out, out);
  v("positions", c.positions, in);
  v("rotary_dim", c.rotary_dim, scalar);
  v("mrope_section", c.mrope_section, scalar);
  v("convention", c.convention, scalar);
  v("layout", c.layout, scalar);
  v("inverse", c.inverse, scalar);
  v("base", c.base, scalar);
  v("scaling", c.scaling, scalar);
  v("threads", c.threads, scalar);
}

template <class V>
void fields(VisionRopeCall& c, V&& v) {
  v("q", c.q, in);
  v("q_out", c.q_out, out);
  v("k", c.k, in);
  v("k_out", c.k_out, out);
  v("positions", c.positions, in);
  v("rotary_dim", c.rotary_dim, scalar);
  v("convention", c.convention, scalar);
  v("axis_order", c.axis_order, scalar);
  v("position_offset", c.position_offset, scalar);
  v("layout", c.layout, scalar);
  v("inverse", c.inverse, scalar);
  v("base", c.base, scalar);
  v("threads", c.threads, scalar);
}

}  // namespace posenc::python
