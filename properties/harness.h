// The harness core: a Problem builds one call's buffers in an Arena; `differential` runs the
// reference and an implementation on identical copies and checks guard bytes and tolerance.
// Each family's properties/<family>.cc provides compare(), smoke problems and its properties
// (property.h); a call's views and outputs come from its view table (posenc/kernel.h).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "posenc/properties/arena.h"
#include "posenc/properties/compare.h"
#include "posenc/registry.h"

namespace posenc::harness {

// One problem: its description and a deterministic builder. Building twice gives two independent
// copies with identical contents.
template <class Call>
struct Problem {
  std::string label;
  std::function<Call(Arena&)> build;
};

// Every tensor of a call, inputs and outputs, in its view table's order (null for an absent
// optional view).
template <class Call>
std::vector<Tensor*> views(Call& call) {
  std::vector<Tensor*> all;
  for (const auto& field : Call::view_table()) all.push_back(field.in(call));
  return all;
}

// The outputs a call has, in its view table's order.
template <class Call>
std::vector<Tensor> outputs(const Call& call) {
  std::vector<Tensor> out;
  for_each_view(call, [&](const auto& field, const Tensor& t) {
    if (field.is_output()) out.push_back(t);
  });
  return out;
}

// Per family (defined in properties/<family>.cc):
//   Comparison compare(const Call& expected, const Call& got, const Bound& bound);
//     or, for a family whose tolerance unit reads inputs its calls may overwrite (in place), which
//     says so with `static constexpr bool kUnitReadsInputs = true;` in its Call:
//     Comparison compare(const Call& input, const Call& expected, const Call& got,
//     const Bound& bound), with `input` a fresh, never-run build of the same problem;
//   std::vector<Problem<Call>> smoke_problems();
#define POSENC_FAMILY(name, Call, NAME)                                          \
  Comparison compare(const Call& expected, const Call& got, const Bound& bound); \
  Comparison compare(const Call& input, const Call& expected, const Call& got, const Bound& bound);
#include "posenc/families.inc"
template <class Call>
inline constexpr bool unit_reads_inputs = requires {
  requires Call::kUnitReadsInputs;
};
template <class Call>
std::vector<Problem<Call>> smoke_problems();

// A realistic scaling of each kind for rotary dim d (DeepSeek-style YaRN, Llama 3.1, Phi-3-style
// LongRoPE, ...), shared by the rope families' problems.
RopeScaling example_scaling(RopeScalingKind kind, int64_t rotary_dim);
// Tags where `s` sits against the thresholds at which its formula switches branch: seq_len at (or
// one beside) dynamic NTK's max_position or LongRoPE's L₀, YaRN factors ≤ 1 with a derived or an
// explicit attention factor, a pair's wavelength (rotary dim d, `base`) at (or one ulp beside)
// Llama 3's L₀/high or L₀/low (RC_CLASSIFY, for the minimum shares of the rope families).
void classify_switches(const RopeScaling& s, int64_t d, double base);
// vLLM's cos_sin_cache: one [rows, rotary_dim] buffer (f32, or bf16), cos in the first half of each
// row and sin in the second; returns the (cos, sin) views, each [rows, rotary_dim/2].
std::pair<Tensor, Tensor> vllm_cache(Arena& arena, int64_t rows, int64_t rotary_dim,
                                     DType dtype = DType::f32);

// Writes one element of an i32 or i64 view (positions), the inverse of load_index.
void store_index(const Tensor& t, int64_t offset, int64_t value);

// Deterministic values for a problem's inputs.
class Values {
 public:
  explicit Values(uint64_t seed) : rng_(seed) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  // Fills a float view with uniform values in [lo, hi).
  void fill(const Tensor& t, double lo = -1, double hi = 1);
  // Fills an index view with integers in [lo, hi].
  void fill_index(const Tensor& t, int64_t lo, int64_t hi);

 private:
  std::mt19937_64 rng_;
};

// How a problem's query and key positions are chosen.
enum class PositionPattern : uint8_t {
  cache,  // keys 0 … tk − 1, queries the last tq ≤ tk of them (prefill or decode on a cache)
  shifted,     // the same, ending at kMaxPosition
  duplicates,  // random in [0, 5]: repeated positions, keys after queries
  wide,        // random in [0, kMaxPosition]
};
const char* positions_name(PositionPattern kind);
void fill_positions(const Tensor& q_positions, const Tensor& k_positions, PositionPattern kind,
                    Values& values);

// The outcome of running one implementation on one problem.
struct Outcome {
  bool ok = true;
  std::string failure;  // empty when ok
  Comparison comparison;
};

// The family's compare(), handed a pristine build of the problem when it takes one.
template <class Call>
Comparison compare_outputs(const Problem<Call>& problem, const Call& expected, const Call& got,
                           const Bound& bound) {
  if constexpr (unit_reads_inputs<Call>) {
    Arena arena;
    return compare(problem.build(arena), expected, got, bound);
  } else {
    return compare(expected, got, bound);
  }
}

template <class Call>
Outcome differential(const Impl<Call>& impl, const Problem<Call>& problem) {
  Outcome o;
  Arena ref_arena, got_arena;
  const Call expected = problem.build(ref_arena);
  reference_impl<Call>().run(expected);
  const Call got = problem.build(got_arena);
  got_arena.snapshot();
  try {
    impl.run(got);
  } catch (const std::exception& e) {
    return {false, std::string("threw: ") + e.what(), {}};
  }
  if (auto stray = got_arena.stray_write(outputs(got))) {
    return {false, "wrote outside its outputs: " + *stray, {}};
  }
  o.comparison = compare_outputs(problem, expected, got, impl.bound);
  o.ok = o.comparison.ok;
  if (!o.ok) o.failure = o.comparison.describe();
  return o;
}

}  // namespace posenc::harness
