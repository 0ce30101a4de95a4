// Linked into every fuzz target so that a campaign's heap addresses are the same in every run.
//
// Highway 1.0.3's libhwy.so measures its timer's resolution in a static initializer
// (nanobenchmark.cc), and how much that allocates depends on the ticks it happens to see. So the
// heap's layout, and every address after it, differed from run to run; addresses reach libFuzzer
// through the comparisons it traces (a bounds or overlap check) and steer its mutations, so two
// campaigns from one seed diverged. Only hwy::Measure uses the resolution, and no fuzz target
// calls it: this definition, exported by the executable, is the one libhwy's initializer binds to
// (its call goes through the PLT), and it measures nothing.
#include "hwy/nanobenchmark.h"  // declares it: a signature change fails to compile

namespace hwy {
namespace platform {
uint64_t TimerResolution() { return 1; }
}  // namespace platform
}  // namespace hwy
