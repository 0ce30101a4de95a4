// rope's problem spec, its builder and generator, and the tolerance model its properties share
// (properties/rope.cc); the properties themselves, one named function each, are in
// properties/rope_properties.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "properties/generic.h"

namespace posenc::harness::rope {

enum class Cache : uint8_t {
  none,    // angles on the fly from base and scaling
  built,   // the reference's own table, in vLLM's [rows, cos | sin] layout
  random,  // arbitrary values: the kernel must read them as given
};

// One rope problem. Layout slots: q, q_out, k, k_out, positions, cos, sin.
struct RopeSpec {
  int64_t tokens = 0, hq = 1, hk = 0, head_dim = 2, rotary_dim = 2;  // hk = 0: no k
  RopeLayout layout = RopeLayout::half_split;
  bool inverse = false, in_place = false;
  double base = 10000;
  RopeScaling scaling;
  Cache cache = Cache::none;
  bool vllm = false;  // a built cache in vLLM's [cos | sin] rows
  Positions positions;
  Fill q, k, table;  // table: the random cache's values
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;        // q, k and their outputs
  DType cache_dtype = DType::f32;  // cos and sin
};

std::string describe(const RopeSpec& s);
void showValue(const RopeSpec& s, std::ostream& os);
RopeCall build(const RopeSpec& s, Arena& arena);

// q, q_out and (when s.hk > 0) k, k_out of a rope-shaped call (rope, mrope) in layout slots 0–3,
// the outputs being their inputs' views when s.in_place; q and k filled from s.q and s.k.
template <class Spec, class Call>
void alloc_activations(const Spec& s, Arena& arena, Call& call) {
  call.q = arena.alloc(s.dtype, {s.tokens, s.hq, s.head_dim}, s.layouts[0]);
  s.q.apply(call.q);
  call.q_out =
      s.in_place ? call.q : arena.alloc(s.dtype, {s.tokens, s.hq, s.head_dim}, s.layouts[1]);
  if (s.hk > 0) {
    call.k = arena.alloc(s.dtype, {s.tokens, s.hk, s.head_dim}, s.layouts[2]);
    s.k.apply(*call.k);
    call.k_out =
        s.in_place ? *call.k : arena.alloc(s.dtype, {s.tokens, s.hk, s.head_dim}, s.layouts[3]);
  }
}

// Cached problems keep positions (cache rows) below this, and rotary dims small: a cache has a row
// for every position up to the largest.
constexpr int64_t kCachedPositions = 2047;

struct RopeOptions {
  bool specials = true;
  std::optional<Cache> cache;  // forced, or any
  std::optional<RopeLayout> layout;
  bool needs_k = false, partial = false, unit_factor = false;
  // f32, bf16 or f16 activations and an f32 or bf16 cache; else f32 throughout (the mathematical
  // properties derive their tolerances from the f32 unit).
  bool any_dtype = false;
  int64_t min_tokens = 0, max_tokens = 16;
};

// Under a pin (PinnedRope, property.h) every generated spec has the model's parameters: head_dim,
// rotary_dim, pair layout, base and scaling; positions stay below its max_position_embeddings.
rc::Gen<RopeSpec> rope_spec(RopeOptions o);
// The pin's parameters into `s` (nothing without a pin), for generators that redraw them.
void apply_pin(RopeSpec& s);
void classify(const RopeSpec& s);

// The problems of the generic properties: any, large, and the bad-input mutations.
Problems<RopeCall, RopeSpec> rope_problems();

// ---- The tolerance model ----

// fp64 angles' error in units of a rotated element (see rope.cc); 0 for a random cache.
double angle_slack(const RopeSpec& s);
// Against exact math, one run of a kernel within `bound` of the reference.
double rope_exact_bound(double bound, const RopeSpec& s);
// A cache's f32 cos and sin are each ½ ulp_f32(a) off, so (c, s) is a rotation scaled by
// 1 ± 2√2·2⁻²⁵ (a = 1) and a rotated element ‖x‖·√2·2⁻²⁵ off: ≤ √2 units of ulp(‖x‖) ≥ ‖x‖·2⁻²⁴.
constexpr double kCacheRounding = std::numbers::sqrt2;

// Pair i's two dims.
std::pair<int64_t, int64_t> pair_dims(const RopeSpec& s, int64_t i);
// The attention factor of an on-the-fly call (1 for a cached one, whose rows carry theirs).
double fly_factor(const RopeCall& call);
// f for token t, pair i: `fly` (fly_factor) on the fly, ‖(cos, sin)‖ of the row read if cached.
double factor_at(const RopeCall& call, double fly, int64_t t, int64_t i);

// ---- Running and editing calls ----

// The dims [from, from + count) of a [tokens, heads, head_dim] view.
Tensor dims(Tensor t, int64_t from, int64_t count);

// Runs impl on a fresh build; `edit` may change the call first.
template <class Edit>
RopeCall run(const Impl<RopeCall>& impl, const RopeSpec& s, Arena& arena, Edit&& edit) {
  RopeCall call = build(s, arena);
  edit(call, arena);
  impl.run(call);
  return call;
}
RopeCall run(const Impl<RopeCall>& impl, const RopeSpec& s, Arena& arena);
// Writes positions into a call's positions tensor.
void set_positions(const RopeCall& call, const std::vector<int64_t>& values);
// A contiguous copy of a [tokens, heads, head_dim] view, optionally as f64.
Tensor copy_of(const Tensor& t, Arena& arena, DType dtype = DType::f32);
// Rotary dims reordered between layouts (to half-split from interleaved, or back); tail kept.
Tensor relayout(const Tensor& t, int64_t d, bool to_half_split, Arena& arena);

// ---- The relative-position check of rope, mrope and vision_rope ----

// Token 2 of q gets token 0's values and token 3 of k token 1's, so that rotating tokens 2, 3 at
// shifted positions can be compared with tokens 0, 1.
void repeat_tokens(const Tensor& q, const Tensor& k);
// The unit of rotating element (t, h, j) of x: ulp_f32 of its pair's norm times `factor`; 0 in the
// tail, which is copied exactly.
double pair_unit(const Tensor& x, RopeLayout layout, int64_t rotary_dim, int64_t t, int64_t h,
                 int64_t j, double factor = 1);
// An element's unit (of its input, at token t, head h, dim j), for same_dots.
using ElementUnit = std::function<double(int64_t t, int64_t h, int64_t j)>;
// ⟨q_out[0, h], k_out[1, g]⟩ against ⟨q_out[2, h], k_out[3, g]⟩ for every pair of heads. With each
// element ≤ b of its unit off, ⟨x, y⟩ moves by ≤ Σ b·(|x|·uy + |y|·ux) + b²·ux·uy; the two dot
// products together by the sum of theirs. `describe(h, g)` names a failing pair.
Verdict same_dots(const Tensor& q_out, const Tensor& k_out, double b, const ElementUnit& unit_q,
                  const ElementUnit& unit_k,
                  const std::function<std::string(int64_t h, int64_t g)>& describe);
// The same for a rotation by factor 1 of q_in into q_out and k_in into k_out (mrope, vision_rope),
// a failure naming the heads, the shifted axis and the shift.
Verdict same_dots(const Tensor& q_out, const Tensor& k_out, double b, const Tensor& q_in,
                  const Tensor& k_in, RopeLayout layout, int64_t rotary_dim, int axis,
                  int64_t shift);

// ---- The family's own properties (rope_properties.cc) ----

Property<RopeCall> pair_norm();
Property<RopeCall> relative();
Property<RopeCall> identity();
Property<RopeCall> composition();
Property<RopeCall> inverse();
Property<RopeCall> interleaved_permutation();
Property<RopeCall> tail_untouched();
Property<RopeCall> cached_equals_on_the_fly();
Property<RopeCall> linear_is_position_over_factor();
Property<RopeCall> shuffle();

}  // namespace posenc::harness::rope
