// The optimized kernels: Highway SIMD compiled for every target Highway builds on this
// architecture, threaded over a persistent pool with static partitioning. Each function returns its
// family's registry entries: "<family>/optimized" (dynamic dispatch to the best target this CPU
// runs), then "<family>/hwy:<Target>" for each compiled target. Every entry validates its call
// before writing, gives bitwise-identical output for every thread count, and states its accuracy
// bound in the family's tolerance unit (see each function's definition).
#pragma once

#include <functional>
#include <vector>

#include "posenc/families.h"
#include "posenc/kernel.h"

namespace posenc::optimized {

// One per family, named after it: optimized::rope(), ... Each states its bound where it is defined,
// in optimized/<family>.cc.
#define POSENC_FAMILY(name, Call, NAME) std::vector<Impl<Call>> name();
#include "posenc/families.inc"

// rope's "optimized" entry for a call a decode loop repeats (posenc::RopeStep, run.h): validated
// and planned once, here; each call of the result checks the positions' values and rotates.
std::function<void()> rope_step(const RopeCall& call);

}  // namespace posenc::optimized
