// The fuzz decoder: any byte string becomes one bounded problem of a family, so libFuzzer can
// steer shapes, strides, positions, parameters and data. The fuzz targets and the tests in fuzz/
// share it: a crashing input replays as a regression case with `check(decode<Call>(bytes))`.
//
// Byte 0 picks the implementations (below 0xC0: all; else registry entry byte − 0xC0); the rest
// feeds a FuzzedDataProvider. A decoded problem may be invalid on purpose (positions past 2²⁴ or
// negative, a corrupted shape, stride, rank, dtype, null data, an output aliasing an input, bad
// parameters): validation must then reject it everywhere. A corruption only ever shrinks a view or
// makes it invalid, so an accepted call never reaches outside the memory it was given.
//
// The float dtypes (f32, bf16, f16, and the mixed combinations a family allows) are decoded last,
// from bytes no other choice reads, and are f32 when the input runs out: an input that decoded to
// an f32 call before the dtype dimension existed, and was read to its end, decodes to it still.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "posenc/error.h"
#include "properties/harness.h"

namespace posenc::harness {

template <class Call>
struct Decoded {
  Problem<Call> problem;
  std::optional<size_t> only;  // run just this registry index (mod size); nullopt: every one
  DType dtype = DType::f32;    // the activations' and outputs' dtype, as decoded
};

// Deterministic: decoding the same bytes twice gives identical problems. Defined for every family.
template <class Call>
Decoded<Call> decode(std::span<const uint8_t> bytes);

// The call's views and parameters on one line, for failure messages.
template <class Call>
std::string describe(const Call& call);

namespace detail {

// Runs an implementation on a call validate() rejected: it must throw posenc::Error naming the
// same argument and change no byte of any buffer. Returns "" or what went wrong.
template <class Call>
std::string expect_rejection(const Impl<Call>& impl, const Problem<Call>& problem,
                             const Error& rejected) {
  Arena arena;
  const Call call = problem.build(arena);
  arena.snapshot();
  try {
    impl.run(call);
    return std::string("accepted a call validate() rejects: ") + rejected.what();
  } catch (const Error& e) {
    if (e.argument() != rejected.argument()) {
      return "rejected with argument '" + e.argument() + "' where validate() names '" +
             rejected.argument() + "': " + e.what();
    }
  } catch (const std::exception& e) {
    return std::string("threw a non-posenc exception on bad input: ") + e.what();
  }
  if (auto stray = arena.stray_write({})) return "rejected the call but wrote " + *stray;
  return "";
}

// Runs an implementation on a valid call against the reference (guard bytes, tolerance), and a
// threaded one again with 1 thread: the outputs must be bitwise identical.
template <class Call>
std::string expect_agreement(const Impl<Call>& impl, const Problem<Call>& problem) {
  Outcome outcome;
  try {
    outcome = differential(impl, problem);
  } catch (const std::exception& e) {
    return std::string("the reference threw on a call validate() accepts: ") + e.what();
  }
  if (!outcome.ok) return outcome.failure;
  if (!impl.threaded) return "";
  Arena one_arena, many_arena;
  Call one = problem.build(one_arena), many = problem.build(many_arena);
  one.threads = 1;
  if (many.threads == 1) many.threads = 3;
  try {
    impl.run(one);
    impl.run(many);
  } catch (const std::exception& e) {
    return std::string("threw when rerun with another thread count: ") + e.what();
  }
  const Comparison same = compare_outputs(problem, one, many, 0);
  if (!same.ok) {
    return "threads=" + std::to_string(many.threads) +
           " differs from threads=1: " + same.describe();
  }
  return "";
}

}  // namespace detail

// Runs one decoded problem the way the fuzz targets do, over `impls` (the registry by default):
// every available implementation that supports the call must reject it exactly as validate()
// does, or agree with the reference. Returns the first failure, naming the implementation, the
// call and the worst element; nullopt when every implementation passed. `on_run`, if given, gets
// "<impl> on <call>" before each implementation runs, for a crash handler to print.
template <class Call>
std::optional<std::string> check(const Decoded<Call>& decoded,
                                 const std::vector<Impl<Call>>& impls = implementations<Call>(),
                                 const std::function<void(const std::string&)>& on_run = {}) {
  Arena arena;
  const Call call = decoded.problem.build(arena);
  const std::string what = describe(call);
  std::optional<Error> rejected;
  try {
    call.validate();
  } catch (const Error& e) {
    rejected = e;
  }
  for (size_t i = 0; i < impls.size(); ++i) {
    if (decoded.only && *decoded.only % impls.size() != i) continue;
    const Impl<Call>& impl = impls[i];
    if (!impl.unavailable_reason().empty() || !supports(impl, call)) continue;
    if (on_run) on_run(impl.name + " on " + what);
    const std::string failure = rejected
                                    ? detail::expect_rejection(impl, decoded.problem, *rejected)
                                    : detail::expect_agreement(impl, decoded.problem);
    if (!failure.empty()) return impl.name + " on " + what + ": " + failure;
  }
  return std::nullopt;
}

}  // namespace posenc::harness
