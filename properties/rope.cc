// rope: outputs, tolerance model and problems.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <tuple>

#include "properties/harness.h"
#include "reference/reference.h"

namespace posenc::harness {

std::vector<Tensor> outputs(const RopeCall& call) {
  std::vector<Tensor> out = {call.q_out};
  if (call.k_out) out.push_back(*call.k_out);
  return out;
}

namespace {

// The dims [from, from + count) of a [tokens, heads, head_dim] view.
Tensor dims(Tensor t, int64_t from, int64_t count) {
  t.data = t.as<float>() + from * t.strides[2];
  t.shape[2] = count;
  return t;
}

}  // namespace

Comparison compare(const RopeCall& input, const RopeCall& expected, const RopeCall& got,
                   double bound) {
  // Unit: ulp_f32(f·‖(a, b)‖) per rotated element, (a, b) its pair in `input` (in-place calls
  // have overwritten theirs in `expected`), f the attention factor, or with a cache the norm of
  // the (cos, sin) it holds; see rope.h. The pass-through tail is compared bit for bit.
  const int64_t d = input.rotary_dim, half = d / 2;
  const double f =
      input.cached() ? 0 : reference::frequencies(d, input.base, input.scaling).attention_factor;
  auto one = [&](const std::string& name, const Tensor& x, const Tensor& want, const Tensor& have) {
    auto unit = [&](const int64_t* ix) {
      const int64_t t = ix[0], h = ix[1], j = ix[2];
      const int64_t i = input.layout == RopeLayout::half_split ? j % half : j / 2;
      const int64_t j0 = input.layout == RopeLayout::half_split ? i : 2 * i;
      const int64_t j1 = input.layout == RopeLayout::half_split ? i + half : 2 * i + 1;
      const double a = load(x, x.offset(t, h, j0)), b = load(x, x.offset(t, h, j1));
      double scale = f;
      if (input.cached()) {
        const int64_t p = load_index(input.positions, input.positions.offset(t));
        scale = std::hypot(load(*input.cos, input.cos->offset(p, i)),
                           load(*input.sin, input.sin->offset(p, i)));
      }
      return ulp_f32(scale * std::hypot(a, b));
    };
    Comparison c = harness::compare(name, dims(want, 0, d), dims(have, 0, d), bound, unit);
    const int64_t tail = x.shape[2] - d;
    c.merge(harness::compare(name + "[:, :, rotary_dim:]", dims(want, d, tail), dims(have, d, tail),
                             0, [](const int64_t*) { return 1.0; }));
    return c;
  };
  Comparison c = one("q_out", input.q, expected.q_out, got.q_out);
  if (input.k) c.merge(one("k_out", *input.k, *expected.k_out, *got.k_out));
  return c;
}

namespace {

enum class Cache : uint8_t {
  none,    // angles on the fly from base and scaling
  built,   // the reference's own table, in vLLM's [rows, cos | sin] layout
  random,  // arbitrary values: the kernel must read them as given
};

struct RopeShape {
  int64_t tokens, hq, hk;  // hk = 0: no k
  int64_t head_dim, rotary_dim;
  RopeLayout layout;
  RopeScalingKind scaling;
  Cache cache;
  bool inverse, in_place;
  Layout memory;
  DType positions;
  int64_t max_position;  // the first token sits here, the others anywhere in [0, max_position]
};

Problem<RopeCall> rope_problem(RopeShape s, uint64_t seed) {
  const char* cache = s.cache == Cache::none    ? "on the fly"
                      : s.cache == Cache::built ? "cached"
                                                : "random cache";
  const double base = s.scaling == RopeScalingKind::llama3 ? 500000 : 10000;
  const RopeScaling scaling = example_scaling(s.scaling, s.rotary_dim);
  std::string label = fmt::format(
      "tokens={} hq={} hk={} head_dim={} rotary_dim={} {}{} {} {}{} {} {} positions<={}", s.tokens,
      s.hq, s.hk, s.head_dim, s.rotary_dim, layout_name(s.layout), s.inverse ? " inverse" : "",
      s.cache == Cache::none ? scaling.describe() : std::string(), cache,
      s.in_place ? " in place" : "", layout_name(s.memory), dtype_name(s.positions),
      s.max_position);
  return {label, [=](Arena& arena) {
            Values values(seed);
            RopeCall call{.rotary_dim = s.rotary_dim,
                          .layout = s.layout,
                          .inverse = s.inverse,
                          .base = base,
                          .scaling = scaling};
            call.q = arena.alloc(DType::f32, {s.tokens, s.hq, s.head_dim}, s.memory);
            values.fill(call.q, -2, 2);
            call.q_out = s.in_place
                             ? call.q
                             : arena.alloc(DType::f32, {s.tokens, s.hq, s.head_dim}, s.memory);
            if (s.hk > 0) {
              call.k = arena.alloc(DType::f32, {s.tokens, s.hk, s.head_dim}, s.memory);
              values.fill(*call.k, -2, 2);
              call.k_out = s.in_place
                               ? *call.k
                               : arena.alloc(DType::f32, {s.tokens, s.hk, s.head_dim}, s.memory);
            }
            call.positions = arena.alloc(s.positions, {s.tokens});
            values.fill_index(call.positions, 0, s.max_position);
            if (s.positions == DType::i64)
              call.positions.as<int64_t>()[0] = s.max_position;
            else
              call.positions.as<int32_t>()[0] = static_cast<int32_t>(s.max_position);
            const int64_t rows = s.max_position + 1, half = s.rotary_dim / 2;
            if (s.cache == Cache::built) {
              std::tie(call.cos, call.sin) = vllm_cache(arena, rows, s.rotary_dim);
              reference_impl<RopeCacheCall>().run({.rotary_dim = s.rotary_dim,
                                                   .base = base,
                                                   .scaling = scaling,
                                                   .cos = *call.cos,
                                                   .sin = *call.sin});
            } else if (s.cache == Cache::random) {
              call.cos = arena.alloc(DType::f32, {rows, half}, s.memory);
              call.sin = arena.alloc(DType::f32, {rows, half}, s.memory);
              values.fill(*call.cos);
              values.fill(*call.sin);
            }
            return call;
          }};
}

}  // namespace

template <>
std::vector<Problem<RopeCall>> smoke_problems<RopeCall>() {
  using K = RopeScalingKind;
  using L = Layout;
  using R = RopeLayout;
  using C = Cache;
  constexpr int64_t kTop = kMaxPosition;
  return {
      // tokens hq hk head_dim rotary_dim layout scaling cache inverse in_place memory positions max
      rope_problem({7, 4, 4, 64, 64, R::half_split, K::none, C::none, false, false, L::contiguous,
                    DType::i64, 4096},
                   1),
      rope_problem({5, 2, 0, 64, 32, R::interleaved, K::linear, C::none, false, true, L::padded,
                    DType::i64, 1 << 20},
                   2),
      rope_problem({6, 8, 2, 128, 128, R::half_split, K::ntk, C::none, true, false, L::permuted,
                    DType::i32, kTop},
                   3),
      rope_problem({9, 3, 1, 32, 32, R::interleaved, K::dynamic_ntk, C::none, true, true, L::padded,
                    DType::i64, kTop},
                   4),
      rope_problem({4, 4, 1, 96, 64, R::half_split, K::yarn, C::none, false, false, L::contiguous,
                    DType::i64, kTop},
                   5),
      rope_problem({5, 4, 2, 128, 128, R::half_split, K::llama3, C::none, false, true,
                    L::contiguous, DType::i64, 1 << 17},
                   6),
      rope_problem({5, 2, 2, 96, 96, R::half_split, K::longrope, C::none, false, true, L::padded,
                    DType::i64, kTop},
                   7),
      rope_problem({8, 4, 1, 80, 64, R::half_split, K::yarn, C::built, false, false, L::contiguous,
                    DType::i64, 4096},
                   8),
      rope_problem({6, 3, 2, 24, 16, R::interleaved, K::none, C::random, true, true, L::permuted,
                    DType::i32, 300},
                   9),
      rope_problem({3, 2, 3, 16, 8, R::interleaved, K::llama3, C::built, true, false, L::padded,
                    DType::i64, 64},
                   10),
  };
}

}  // namespace posenc::harness
