// attention's block products by Eigen, compiled once per instruction set: POSENC_GEMM_ISA names
// the copy (baseline, avx2, avx512) and CMake passes the matching -m flags. Eigen lives in a
// namespace of this copy's own (posenc_eigen_<isa>), so its inline functions and templates never
// merge with another copy's at link time. Nothing from std is emitted here as a weak symbol
// either (checked with nm); keep this file to Eigen and the two functions.
#ifndef POSENC_GEMM_ISA
#error "compile attention_gemm.cc through CMake, which defines POSENC_GEMM_ISA"
#endif

#include "optimized/attention_gemm.h"

#define POSENC_GEMM_CAT2(a, b) a##b
#define POSENC_GEMM_CAT(a, b) POSENC_GEMM_CAT2(a, b)
#define Eigen POSENC_GEMM_CAT(posenc_eigen_, POSENC_GEMM_ISA)
#define POSENC_GEMM_NAMESPACE POSENC_GEMM_CAT(gemm_, POSENC_GEMM_ISA)
#define EIGEN_DONT_PARALLELIZE  // one thread: attention splits its work itself
#include <Eigen/Core>

namespace posenc::optimized::POSENC_GEMM_NAMESPACE {
namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using In = Eigen::Map<const Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using Out = Eigen::Map<Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;

}  // namespace

void product_abt(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                 int64_t m, int64_t n, int64_t k) {
  Out(c, m, n, Eigen::OuterStride<>(ldc)).noalias() =
      In(a, m, k, Eigen::OuterStride<>(lda)) * In(b, n, k, Eigen::OuterStride<>(ldb)).transpose();
}

void product_ab(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                int64_t m, int64_t n, int64_t k) {
  Out(c, m, n, Eigen::OuterStride<>(ldc)).noalias() =
      In(a, m, k, Eigen::OuterStride<>(lda)) * In(b, k, n, Eigen::OuterStride<>(ldb));
}

}  // namespace posenc::optimized::POSENC_GEMM_NAMESPACE
