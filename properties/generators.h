// RapidCheck generators shared by every family: floats of every class, tensor contents, positions
// and layouts. Each shrinks toward the simplest failing case: magnitudes near 1, no special values,
// small positions, contiguous memory.
#pragma once

#include <rapidcheck.h>

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "posenc/rope_frequencies.h"
#include "posenc/tensor.h"
#include "properties/arena.h"

namespace posenc::harness {

// Tensor contents as a recipe: seeded values u·2^k with u uniform in [−1, 1) and k an integer
// in [lo, hi], then some elements (logical row-major index modulo numel) overwritten by
// special values. A recipe is small to show and to shrink, and fills any shape.
struct Fill {
  uint64_t seed = 0;
  int lo = 0, hi = 0;
  std::vector<std::pair<uint32_t, float>> specials;

  void apply(const Tensor& t) const;
  // Whether any special is ±0, subnormal, ±∞ or NaN (rather than an ordinary normal float).
  bool has_specials() const;
  bool spread() const { return hi - lo >= 8; }  // magnitudes over ≥ 8 binades
  std::string describe() const;
};

// Positions of one tensor, with the pattern that produced them.
struct Positions {
  std::vector<int64_t> values;
  DType dtype = DType::i64;
  std::string kind;  // "small", "long", "near max", "duplicated", "descending", "varlen", ...

  int64_t max() const;
  bool long_range() const { return max() >= (int64_t{1} << 20); }
  void store(const Tensor& t) const;
  std::string describe() const;
};

// One layout per tensor slot of a call, in a family-defined order.
using Layouts = std::array<Layout, 8>;
bool any_strided(const Layouts& layouts);
Layouts uniform_layouts(Layout layout);

void showValue(const Fill& fill, std::ostream& os);
void showValue(const Positions& positions, std::ostream& os);

namespace gen {

// Every class of f32: ±0, subnormals, normals of every binade, ±∞ and NaN. (RapidCheck's
// arbitrary<float> only yields moderate normal values.) Shrinks toward 0 and toward magnitude 1.
rc::Gen<float> f32();
// A uniform integer in [lo, hi] whatever RapidCheck's size; shrinks toward lo.
rc::Gen<int64_t> uniform(int64_t lo, int64_t hi);
// Sized: small early in a run, up to hi; shrinks toward lo.
rc::Gen<int64_t> sized(int64_t lo, int64_t hi);
// A count of tokens: sized in [1, hi], and 0 in about one case in twenty.
rc::Gen<int64_t> count(int64_t hi);
// Contents: mostly values in (−1, 1), often magnitudes spread over many binades, and in about a
// quarter of cases a few special values (from f32()).
rc::Gen<Fill> fill();
// Finite, moderate contents for properties whose math assumes ordinary numbers: magnitudes
// within 2^±`spread`, no specials.
rc::Gen<Fill> finite_fill(int spread = 4);
// `count` positions in [0, max]: small, long (up to max), near max, duplicated, descending,
// packed varlen sequences each counting up from its own offset, or binade edges (2^k − 1, 2^k,
// 2^24). i64 or i32.
rc::Gen<Positions> positions(int64_t count, int64_t max);
// Query and key positions for a bias: independent (as gen::positions), or a KV cache: keys
// offset … offset + tk − 1 and queries its last tq (prefill or decode), the offset up to 2²⁴.
rc::Gen<std::pair<Positions, Positions>> query_key_positions(int64_t tq, int64_t tk);
// The dtype of a call's activations and outputs: f32 half the time, bf16 and f16 a quarter each;
// shrinks toward f32. Each family generates it as one more dimension of the same cases, so an
// implementation that declares f32 only still runs about half of them (dtype_shares in generic.h).
rc::Gen<DType> float_dtype();
// A rope cache's dtype: f32 twice as often as bf16 (rope.h, rope_cache.h).
rc::Gen<DType> cache_dtype();
rc::Gen<Layout> layout();
// Mostly all-contiguous; otherwise each slot independently contiguous, padded or permuted.
rc::Gen<Layouts> layouts();

// A rope base: mostly the usual 10⁴, 5·10⁵ or 10⁶, sometimes anything in [1.1, 10⁷].
rc::Gen<double> rope_base();
// Valid parameters of one scaling kind for rotary dim d (rope_frequencies.cc), ranging over what
// configs use and beyond: factors below and above 1, short and long contexts, explicit attention
// factors.
rc::Gen<RopeScaling> scaling(RopeScalingKind kind, int64_t rotary_dim);
// Any kind, then its parameters.
rc::Gen<RopeScaling> any_scaling(int64_t rotary_dim);

}  // namespace gen

}  // namespace posenc::harness
