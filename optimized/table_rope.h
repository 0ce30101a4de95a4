// mrope and vision_rope: rope over a per-token cos/sin table that the family fills. Each part of
// the tokens fills its own table rows and then rotates its own tokens, all in one parallel region:
// one hand-off per call, and no serial phase for the pool's worker to fall asleep in (a table
// filled on one thread before a threaded rope made 2 threads slower than 1: M-RoPE t=128,
// 32 × 128 heads, 0.84–0.90×).
#pragma once

#include <cstdint>
#include <functional>

#include "posenc/kernel.h"
#include "posenc/rope.h"

namespace posenc::optimized {

// Table rows [begin, end): row t's cos θ and sin θ at cos + t·padded and sin + t·padded.
using TableRows = std::function<void(float* cos, float* sin, int64_t begin, int64_t end)>;

// Rotates `call` (validated; its positions and cache are replaced) by `rope`, an optimized rope
// entry, through a table of `padded` floats per row that `rows` fills, on call.threads.
void run_table_rope(const RopeCall& call, int64_t padded, const TableRows& rows,
                    const Impl<RopeCall>& rope);

}  // namespace posenc::optimized
