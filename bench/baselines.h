// The inner loops of the two yardsticks kernels are measured against: a STREAM-like scale and copy
// (the memory roof) and Eigen's GEMM (the attention FLOP/s ceiling). baselines.cc is built with
// -march=native so both use this machine's widest vectors, as the Highway kernels do: run
// posenc_bench where it was built.
#pragma once

#include <cstdint>

namespace posenc::bench {

// a[i] = s·a[i] for i < n.
void stream_scale(float* a, int64_t n, float s);
// b[i] = a[i] for i < n.
void stream_copy(const float* a, float* b, int64_t n);

// Eigen's single-precision GEMM on attention's two products, for heads [h0, h1): per head
// S = Q_h·K_hᵀ (tq × tk, into `scores`), then O_h = S·V_h. q and out are [tq, heads, d], k and v
// [tk, heads, d], all row-major.
void eigen_attention_gemm(const float* q, const float* k, const float* v, float* out, float* scores,
                          int64_t tq, int64_t tk, int64_t heads, int64_t d, int64_t h0, int64_t h1);

}  // namespace posenc::bench
