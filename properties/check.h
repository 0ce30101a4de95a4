// posenc::check: the harness from a user's own test suite. Hand it your kernel as a callable
// taking the family's Call struct, and it runs every property of that family (differential
// against the fp64 reference, guard bytes, layouts, threads, bad input, the family's mathematics)
// on generated problems, exactly as `posenc validate` does, and returns the same report.
//
//   TEST(MyRope, HoldsPosencsProperties) {
//     posenc::check::Options options;
//     options.name = "my_rope";
//     options.variants = posenc::variant::f32 | posenc::variant::rope_half_split | ...;
//     const auto result = posenc::check::rope([](const posenc::RopeCall& c) { my_rope(c); },
//                                             options);
//     EXPECT_TRUE(result.passed()) << result.text();
//   }
//
// No test framework is involved: the result says what failed, and how to replay it.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "posenc/properties/validate.h"
#include "posenc/registry.h"

namespace posenc::check {

struct Options {
  std::string name = "kernel";  // reported as "<family>/<name>"
  // The variant bits the kernel handles (posenc/kernel.h and the family's header); it is called
  // only with problems that need no others, except in bad-input checks. Default: all of them.
  uint64_t variants = kAllVariants;
  double bound = 1;  // stated accuracy, in the family's tolerance unit (its header says which)
  // The same for bf16 and f16 outputs, in units of that dtype; unset: 1 when `bound` > 0, else 0.
  std::optional<double> bound_bf16, bound_f16;
  int64_t max_position = 0;  // the largest position it claims to support; 0 for no claim
  bool threaded = false;     // honours Call::threads: then the threads property applies
  // Cases per property, seed, profile: the CI defaults, or POSENC_PROFILE / RC_PARAMS.
  harness::RunOptions run = harness::RunOptions::from_environment();
  std::string property;   // only this property ("pair_norm" or "rope.pair_norm"); all by default
  std::string reproduce;  // replay the one case a failure printed
  std::optional<double> time_budget;  // seconds; no limit by default
};

struct Result {
  harness::ImplReport report;  // what `posenc validate` prints and writes, for this kernel

  // Some property ran and none failed.
  bool passed() const;
  // The per-property table, then each failure with its minimal counterexample and the reproduce
  // value that replays it (set Options::reproduce to it).
  std::string text() const;
};

template <class Call>
Result run(std::function<void(const Call&)> kernel, const Options& options = {});

// One per family, named after it: posenc::check::rope(kernel, options), ...
#define POSENC_FAMILY(name, Call, NAME) \
  Result name(std::function<void(const Call&)> kernel, const Options& options = {});
#include "posenc/families.inc"

}  // namespace posenc::check
