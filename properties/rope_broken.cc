// rope's broken kernels for the self-test (selftest.h), beside its properties (properties/rope.cc).
// Each computes in fp64 and rounds once, like the reference, so that the bug is the only thing
// wrong with it.
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

enum class RopeBug {
  off_by_one,            // position p + 1
  wrong_layout,          // pairs of the other layout
  sin_sign_flipped,      // (a·c + b·s, −a·s + b·c)
  omega_i_over_d,        // on the fly, ω_i = base^(−i/d)
  rotated_tail,          // also rotates the pass-through dims, pairwise, by pair 0's angle
  f32_angles,            // on the fly, θ = float(p)·float(ω)
  skips_tail_pairs,      // pairs in blocks of 4; the last rotary_dim/2 % 4 pairs pass unrotated
  ignores_inverse,       // always rotates forward
  factor_twice,          // on the fly, the attention factor applied twice
  first_position_only,   // every token rotated by the first token's position
  linear_multiplies,     // linear scaling multiplies ω by the factor instead of dividing
  cache_row_off_by_one,  // with a cache, reads row p + 1 (the last row for the last position)
  products_in_dtype,     // cos, sin and each product rounded to the activation dtype, then summed
  heads_in_tiles_of_16,  // heads in tiles of 16, each tile reading the first one's input heads
};

void rope_with(RopeBug bug, const RopeCall& call) {
  call.validate();
  const int64_t half = call.rotary_dim / 2, tokens = call.q.shape[0];
  reference::RopeFrequencies r;
  if (!call.cached()) r = reference::frequencies(call.rotary_dim, call.base, call.scaling);
  if (bug == RopeBug::omega_i_over_d && !call.cached())
    for (int64_t i = 0; i < half; ++i)
      r.inv_freq[i] = std::pow(call.base, -static_cast<double>(i) / call.rotary_dim);
  if (bug == RopeBug::linear_multiplies && !call.cached() &&
      call.scaling.kind == RopeScalingKind::linear)
    for (double& w : r.inv_freq) w *= call.scaling.factor * call.scaling.factor;
  const double f =
      bug == RopeBug::factor_twice ? r.attention_factor * r.attention_factor : r.attention_factor;
  const double sign = call.inverse && bug != RopeBug::ignores_inverse ? -1.0 : 1.0;
  const RopeLayout layout = bug != RopeBug::wrong_layout            ? call.layout
                            : call.layout == RopeLayout::half_split ? RopeLayout::interleaved
                                                                    : RopeLayout::half_split;
  const int64_t rotated = bug == RopeBug::skips_tail_pairs ? half / 4 * 4 : half;
  std::vector<double> cos(half), sin(half);
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t p = load_index(call.positions,
                           call.positions.offset(bug == RopeBug::first_position_only ? 0 : t));
    if (bug == RopeBug::off_by_one) ++p;
    for (int64_t i = 0; i < half; ++i) {
      if (call.cached()) {
        // Clamped to the last row: the bug is the off-by-one, not a read past the cache.
        const int64_t row =
            std::min(bug == RopeBug::cache_row_off_by_one ? p + 1 : p, call.cos->shape[0] - 1);
        cos[i] = load(*call.cos, call.cos->offset(row, i));
        sin[i] = sign * load(*call.sin, call.sin->offset(row, i));
      } else {
        double angle = static_cast<double>(p) * r.inv_freq[i];
        if (bug == RopeBug::f32_angles)
          angle = static_cast<float>(p) * static_cast<float>(r.inv_freq[i]);
        cos[i] = f * std::cos(angle);
        sin[i] = sign * f * std::sin(angle);
      }
      if (bug == RopeBug::sin_sign_flipped) sin[i] = -sin[i];
      if (bug == RopeBug::products_in_dtype) {
        cos[i] = rounded_to(call.q.dtype, cos[i]);
        sin[i] = rounded_to(call.q.dtype, sin[i]);
      }
    }
    // One product as the kernel forms it: exact, or rounded to the activation dtype.
    const auto product = [&](double a, double b) {
      return bug == RopeBug::products_in_dtype ? rounded_to(call.q.dtype, a * b) : a * b;
    };
    auto one = [&](const Tensor& x, const Tensor& out) {
      for (int64_t h = 0; h < x.shape[1]; ++h) {
        std::vector<double> row(x.shape[2]);
        const int64_t from = bug == RopeBug::heads_in_tiles_of_16 ? h % 16 : h;
        for (int64_t j = 0; j < x.shape[2]; ++j) row[j] = load(x, x.offset(t, from, j));
        std::vector<double> result = row;
        for (int64_t i = 0; i < rotated; ++i) {
          const int64_t j0 = layout == RopeLayout::half_split ? i : 2 * i;
          const int64_t j1 = layout == RopeLayout::half_split ? i + half : 2 * i + 1;
          result[j0] = product(row[j0], cos[i]) - product(row[j1], sin[i]);
          result[j1] = product(row[j0], sin[i]) + product(row[j1], cos[i]);
        }
        if (bug == RopeBug::rotated_tail)
          for (int64_t j = call.rotary_dim; j + 1 < x.shape[2]; j += 2) {
            result[j] = row[j] * cos[0] - row[j + 1] * sin[0];
            result[j + 1] = row[j] * sin[0] + row[j + 1] * cos[0];
          }
        for (int64_t j = 0; j < x.shape[2]; ++j) {
          if (j >= call.rotary_dim && bug != RopeBug::rotated_tail) {  // bit-exact copy
            const size_t size = dtype_size(x.dtype);
            std::memcpy(out.as<char>() + out.offset(t, h, j) * size,
                        x.as<const char>() + x.offset(t, h, j) * size, size);
            continue;
          }
          store(out, out.offset(t, h, j), result[j]);
        }
      }
    };
    one(call.q, call.q_out);
    if (call.k) one(*call.k, *call.k_out);
  }
}

}  // namespace

template <>
std::vector<Broken<RopeCall>> broken_implementations<RopeCall>() {
  using B = RopeBug;
  auto make = [](const char* name, B bug) {
    return broken_kernel<RopeCall>(name, bug, rope_with, 1);
  };
  std::vector<Broken<RopeCall>> list = {
      {make("off_by_one", B::off_by_one), "rotates by position p + 1", "rope.identity"},
      {make("wrong_layout", B::wrong_layout), "pairs of the other layout",
       "rope.interleaved_permutation"},
      {make("sin_sign_flipped", B::sin_sign_flipped), "sin's sign flipped", "rope.differential"},
      {make("omega_i_over_d", B::omega_i_over_d), "ω exponent i/d instead of 2i/d",
       "rope.differential"},
      {make("rotated_tail", B::rotated_tail), "rotates the pass-through tail too",
       "rope.tail_untouched"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32: wrong at long positions",
       "rope.relative"},
      {make("skips_tail_pairs", B::skips_tail_pairs),
       "SIMD-style loop that leaves the last rotary_dim/2 % 4 pairs unrotated",
       "rope.differential"},
      {make("ignores_inverse", B::ignores_inverse), "rotates forward when asked for the inverse",
       "rope.inverse"},
      {make("factor_twice", B::factor_twice), "applies the attention factor twice",
       "rope.pair_norm"},
      {make("first_position_only", B::first_position_only),
       "rotates every token by the first token's position", "rope.shuffle"},
      {make("linear_multiplies", B::linear_multiplies),
       "linear scaling multiplies ω by the factor instead of dividing",
       "rope.linear_is_position_over_factor"},
      {make("cache_row_off_by_one", B::cache_row_off_by_one), "reads cache row p + 1",
       "rope.cached_equals_on_the_fly"},
      {make("products_in_dtype", B::products_in_dtype),
       "computes in the activation dtype, as apply_rotary_pos_emb on bf16 tensors: cos, sin and "
       "each product rounded to it before the sum (rounds twice)",
       "rope.differential"},
      {make("heads_in_tiles_of_16", B::heads_in_tiles_of_16),
       "heads in tiles of 16 whose index wraps: from 17 heads up, head h reads head h mod 16",
       "rope.differential"},
  };
  add_generic(list, "rope");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<RopeCall>() {
  // Each token's rotation stands alone: thread nondeterminism needs a shared running quantity,
  // as in a cache built in chunks.
  return {{"rope.threads", "rope_cache/broken:chunked_f32_angles"}};
}

}  // namespace posenc::harness
