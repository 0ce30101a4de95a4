// The two f32 matrix products of attention's blocks, by Eigen's GEMM. Eigen picks its instruction
// set from the compiler flags, not at run time, so attention_gemm.cc is compiled once per
// instruction set (see CMakeLists.txt), each copy with its own Eigen namespace so that no inline
// function compiled for a wider instruction set can stand in for another copy's. Each Highway
// target of attention.cc calls the copy its CPU is sure to run. Row-major matrices with leading
// dimensions (row strides) in elements; single-threaded; for the same shapes, values and leading
// dimensions the result is the same whatever the addresses.
#pragma once

#include <cstdint>

#define POSENC_DECLARE_ATTENTION_GEMM(ns)                                                          \
  namespace ns {                                                                                   \
  /* c[m×n] = a[m×k] · b[n×k]ᵀ */                                                            \
  void product_abt(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,             \
                   int64_t ldc, int64_t m, int64_t n, int64_t k);                                  \
  /* c[m×n] = a[m×k] · b[k×n] */                                                               \
  void product_ab(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, \
                  int64_t m, int64_t n, int64_t k);                                                \
  }

namespace posenc::optimized {
POSENC_DECLARE_ATTENTION_GEMM(gemm_baseline)  // the compiler's default instruction set
#if POSENC_GEMM_X86
POSENC_DECLARE_ATTENTION_GEMM(gemm_avx2)    // AVX2 + FMA
POSENC_DECLARE_ATTENTION_GEMM(gemm_avx512)  // AVX-512 F, VL, DQ, BW (Highway's AVX3)
#endif
}  // namespace posenc::optimized
