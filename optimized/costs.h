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

// ALiBi and T5 bias elements, in cache (what decides whether a small call splits; calls past the
// caches cost more per element and split anyway). Measured at 1 thread on AMD EPYC (Zen 5),
// [8 heads, 1 query, 32768 keys]: ALiBi 0.061-0.072 ns per element whatever the dtype (f16 and
// bf16 pay for their rounding what they save in bytes); T5 copies bucket lines, so it costs by
// the byte: 0.076-0.087 ns per f32 element, 0.032-0.040 per 16-bit one.
inline constexpr double kAlibiNanosPerElement = 0.07;
inline constexpr double kT5NanosPerByte = 0.02;

}  // namespace posenc::optimized
