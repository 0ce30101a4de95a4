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

#include "posenc/error.h"
#include "posenc/families.h"

namespace posenc {

#define POSENC_FAMILY(name, Call, NAME) void run(const Call& call);
#include "posenc/families.inc"

namespace reference {
#define POSENC_FAMILY(name, Call, NAME) void run(const Call& call);
#include "posenc/families.inc"
}  // namespace reference

}  // namespace posenc
