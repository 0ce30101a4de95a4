// The optimized kernels: Highway SIMD compiled for every target Highway builds on this
// architecture, threaded over a persistent pool with static partitioning. Each function returns its
// family's registry entries: "<family>/optimized" (dynamic dispatch to the best target this CPU
// runs), then "<family>/hwy:<Target>" for each compiled target. Every entry validates its call
// before writing, gives bitwise-identical output for every thread count, and states its accuracy
// bound in the family's tolerance unit (see each function).
#pragma once

#include <vector>

#include "posenc/absolute.h"
#include "posenc/alibi.h"
#include "posenc/attention.h"
#include "posenc/kernel.h"
#include "posenc/t5.h"

namespace posenc::optimized {

// out = x + table[positions] in f32: one correctly rounded add, so bound 0 (bitwise).
std::vector<Impl<AbsoluteCall>> absolute();

// softmax(scale·q·kᵀ + bias + mask)·v, flash-style: f32 products by Eigen's GEMM, online softmax
// by Highway; rows the fast path does not cover (NaN, ±∞, overflow) are computed in fp64 as the
// reference does. Bound 32 in ulp(vmax)·(1 + |scale|·‖q_i‖·kmax), a statistical bound (the
// error analysis is in attention.cc).
std::vector<Impl<AttentionCall>> attention();

// ALiBi slopes and bias, each element evaluated in fp64 as the reference does: bound 0 (bitwise).
std::vector<Impl<AlibiCall>> alibi();

// T5 relative-position bias: the reference's float32 buckets, looked up: bound 0 (bitwise).
std::vector<Impl<T5Call>> t5();

}  // namespace posenc::optimized
