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
#include "posenc/rope.h"
#include "posenc/rope_cache.h"
#include "posenc/rope_frequencies.h"
#include "posenc/sinusoidal.h"
#include "posenc/t5.h"

namespace posenc::optimized {

// out = x + table[positions] in f32: one correctly rounded add, so bound 0 (bitwise). bf16 and f16:
// the reference's double add rounded once (scalar), bitwise too.
std::vector<Impl<AbsoluteCall>> absolute();

// Angles exact in double (split frequencies), sin/cos in double, x added in double, rounded once:
// bound 1 ulp_f32(1 + |x|). bf16 and f16 outputs: the same double sums rounded once (scalar), held
// to 1 ulp of the output dtype (kernel.h).
std::vector<Impl<SinusoidalCall>> sinusoidal();

// Scalar double, the formulas of rope_frequencies.h written independently of the reference: a
// formula evaluated in another order than the reference's differs by a few ulp_f64. Bound 4.
std::vector<Impl<RopeFrequenciesCall>> rope_frequencies();

// a·cos(p·ω), a·sin(p·ω) from exact angles and double sin/cos, rounded once to f32: bound 1 ulp(a).
// A bf16 table is rounded once to bf16 from the same double values.
std::vector<Impl<RopeCacheCall>> rope_cache();

// Coefficients c = f·cos θ, s = ±f·sin θ rounded once to f32 (exact angles, double sin/cos, or the
// cache row), then each output is one FMA over one rounded product: within 1.5 ulp_f32(f·‖pair‖)
// of the exact value before its final rounding, so within 2 of the reference's rounded result.
// Bound 2 (proof in rope.cc). The pass-through tail is copied bit for bit. f32 throughout: a
// product of an input and a coefficient past FLT_MAX overflows (inputs near FLT_MAX with f > 1).
// bf16 and f16 activations (f32 or bf16 caches): promoted, the same f32 arithmetic, rounded once
// more to the output: within 1 ulp of the output dtype (kernel.h).
std::vector<Impl<RopeCall>> rope();

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
