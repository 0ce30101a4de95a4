// rope_cache: outputs, tolerance model and problems.
#include <fmt/format.h>

#include <tuple>

#include "properties/harness.h"
#include "reference/reference.h"

namespace posenc::harness {

std::vector<Tensor> outputs(const RopeCacheCall& call) { return {call.cos, call.sin}; }

Comparison compare(const RopeCacheCall& expected, const RopeCacheCall& got, double bound) {
  // Unit: ulp_f32(a), a the attention factor, see rope_cache.h.
  const double a =
      reference::frequencies(expected.rotary_dim, expected.base, expected.scaling).attention_factor;
  auto unit = [a](const int64_t*) { return ulp_f32(a); };
  Comparison c = harness::compare("cos", expected.cos, got.cos, bound, unit);
  c.merge(harness::compare("sin", expected.sin, got.sin, bound, unit));
  return c;
}

namespace {

// vllm_layout: cos and sin are the two halves of each row of one [rows, rotary_dim] buffer, as in
// vLLM's cos_sin_cache; otherwise two tensors in `layout`.
Problem<RopeCacheCall> cache_problem(int64_t rows, int64_t d, RopeScalingKind kind, Layout layout,
                                     bool vllm_layout) {
  const double base = kind == RopeScalingKind::llama3 ? 500000 : 10000;
  const RopeScaling scaling = example_scaling(kind, d);
  return {fmt::format("rows={} rotary_dim={} {} {}", rows, d, scaling.describe(),
                      vllm_layout ? "vllm [cos | sin] rows" : layout_name(layout)),
          [=](Arena& arena) {
            RopeCacheCall call{.rotary_dim = d, .base = base, .scaling = scaling};
            if (vllm_layout) {
              std::tie(call.cos, call.sin) = vllm_cache(arena, rows, d);
            } else {
              call.cos = arena.alloc(DType::f32, {rows, d / 2}, layout);
              call.sin = arena.alloc(DType::f32, {rows, d / 2}, layout);
            }
            return call;
          }};
}

}  // namespace

template <>
std::vector<Problem<RopeCacheCall>> smoke_problems<RopeCacheCall>() {
  using K = RopeScalingKind;
  using L = Layout;
  return {
      cache_problem(1024, 64, K::none, L::contiguous, false),
      cache_problem(4096, 64, K::yarn, L::contiguous, true),
      cache_problem(2048, 128, K::llama3, L::padded, false),
      cache_problem(512, 96, K::longrope, L::permuted, false),
      cache_problem(300, 32, K::linear, L::padded, true),
      cache_problem(257, 16, K::ntk, L::contiguous, false),
      cache_problem(100, 8, K::dynamic_ntk, L::permuted, false),
  };
}

}  // namespace posenc::harness
