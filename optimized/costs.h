// Measured per-item costs that kernels pass to plan_parts (thread_pool.h), shared where one
// kernel's work is another's.
#pragma once

#include <cstdint>

namespace posenc::optimized {

// rope, in cache: about 0.07 ns per element rotated or copied and 0.2 ns per coefficient pair (a
// cache row, or a rotation step; a fresh sin/cos every 16 tokens costs 1 ns).
inline double rope_nanos_per_token(int64_t heads, int64_t head_dim, int64_t half) {
  return 0.07 * static_cast<double>(heads * head_dim) + 0.2 * static_cast<double>(half);
}

// A table row's cos/sin pair that is a fresh vector SinCos of its own angle (mrope's and
// vision_rope's tables). Measured at 1 thread (AVX-512, [128…4096 tokens, 8…32 heads, 64…128
// dims], the call less a cached rope of the same shape): 1.6–5.7 ns. rope_cache's rows step by
// rotations instead: about 0.5 ns.
inline constexpr double kFreshSinCosPairNanos = 3;

}  // namespace posenc::optimized
