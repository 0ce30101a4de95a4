// One call, one kernel: the direct entry points of every family, for a caller that wants a result
// rather than a table of implementations (posenc/registry.h).
//
//   posenc::run(call)             the registry's "<family>/optimized" entry: Highway's dispatch to
//                                 the best target this CPU runs, within that entry's stated bound
//                                 (optimized/optimized.h). Every such entry declares every variant
//                                 its family's contract accepts (registry/run_test.cc). A family
//                                 that has no optimized kernel yet runs its reference.
//   posenc::reference::run(call)  the fp64 oracle, "<family>/reference" (bound 0).
//
// Both validate the call first: bad input is posenc::Error, raised before any output is written.
#pragma once

#include <functional>

#include "posenc/error.h"
#include "posenc/families.h"

namespace posenc {

#define POSENC_FAMILY(name, Call, NAME) void run(const Call& call);
#include "posenc/families.inc"

// One rope call that a decode loop repeats, layer after layer and step after step, over the same
// buffers: the constructor copies the call, validates it as run(call) would (posenc::Error alike)
// and plans it (thread count included); each step() checks only the positions' values, the one
// precondition that reads data, then rotates with run()'s kernel, bit for bit its output. Between
// steps the views' contents may change (new q, k, positions), never their addresses, shapes or
// strides; later edits to the caller's RopeCall are not seen. One thread at a time per RopeStep
// and its copies, which share one state. Why: run() skips the same work only for a one-token call
// that repeats its thread's last one, and must compare the call's views and parameters to know
// it does (about 13 ns of a 63 ns [1, 8, 64] call on AMD Zen 4; bench/RESULTS.md), and a
// one-token call that differs from it pays about 15 ns to be kept in its place.
class RopeStep {
 public:
  explicit RopeStep(const RopeCall& call);
  void step() const { step_(); }

 private:
  std::function<void()> step_;
};

namespace reference {
#define POSENC_FAMILY(name, Call, NAME) void run(const Call& call);
#include "posenc/families.inc"
}  // namespace reference

}  // namespace posenc
