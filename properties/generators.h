// RapidCheck generators shared by every family: floats of every class, tensor contents, positions
// and layouts. Each shrinks toward the simplest failing case: magnitudes near 1, no special values,
// small positions, contiguous memory.
#pragma once

#include <rapidcheck.h>

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <tuple>
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
// Declared: no ±∞ or NaN for a kernel declaring finite inputs only (posenc/conventions.h).
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
// The KV-cache pattern of query_key_positions alone.
rc::Gen<std::pair<Positions, Positions>> cache_positions(int64_t tq, int64_t tk);
// A decode step's key count over a long KV cache: 512 to 4096 in 2 cases in 3, else up to 32768
// (ggml's attention splits the keys from 512 up; 32768 is a long-context cache).
rc::Gen<int64_t> decode_keys();
// The generators below marked "declared" draw only what the implementations under test declare
// (declared(), property.h): for the built-in ones, everything.
// One of `entries` (weight, value, the variant bits it needs) drawn as rc::gen::weightedElement
// draws, among those whose bits are declared; among all when none is (no case can run then, and
// the runner names the variants its cases needed).
// Reads declared() when called: call it where the case is generated (inside rc::gen::exec).
std::vector<size_t> declared_indices(const std::vector<uint64_t>& needs);
template <class T>
rc::Gen<T> declared_element(const std::vector<std::tuple<size_t, T, uint64_t>>& entries) {
  std::vector<uint64_t> needs;
  for (const auto& e : entries) needs.push_back(std::get<2>(e));
  std::vector<size_t> weights;
  std::vector<T> values;
  for (size_t i : declared_indices(needs)) {
    weights.push_back(std::get<0>(entries[i]));
    values.push_back(std::get<1>(entries[i]));
  }
  // rc::gen::weightedElement's own generator (which takes only an initializer list).
  return rc::gen::detail::WeightedElementGen<T>(std::move(weights), std::move(values));
}
// Positions' dtype: i64 three times as often as i32. Declared (int32 or int64 only).
rc::Gen<DType> position_dtype();
// The dtype of a call's activations and outputs: f32 half the time, bf16 and f16 a quarter each;
// shrinks toward f32. Declared: a kernel declaring f32 only gets f32 in every case.
rc::Gen<DType> float_dtype();
// A rope cache's dtype: f32 twice as often as bf16 (rope.h, rope_cache.h). Declared.
rc::Gen<DType> cache_dtype();
rc::Gen<Layout> layout();
// Mostly all-contiguous; otherwise each slot independently contiguous, padded or permuted.
// Declared: all contiguous for a kernel that does not declare strided views.
rc::Gen<Layouts> layouts();
// The same whatever is declared.
rc::Gen<Layouts> any_layouts();

// A rope base: mostly the usual 10⁴, 5·10⁵ or 10⁶, sometimes anything in [1.1, 10⁷].
rc::Gen<double> rope_base();
// Valid parameters of one scaling kind for rotary dim d and `base` (rope_frequencies.cc), ranging
// over what configs use and beyond: factors below and above 1, short and long contexts, explicit
// attention factors, and Llama 3's factors putting a pair's wavelength at a band's edge.
rc::Gen<RopeScaling> scaling(RopeScalingKind kind, int64_t rotary_dim, double base);
// Any kind, then its parameters.
rc::Gen<RopeScaling> any_scaling(int64_t rotary_dim, double base);
// Any kind the implementations under test declare (variant::scaling_bit), then its parameters;
// reads declared() when called (inside rc::gen::exec).
rc::Gen<RopeScaling> declared_scaling(int64_t rotary_dim, double base);

}  // namespace gen

}  // namespace posenc::harness
