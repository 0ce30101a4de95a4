#include "bench/baselines.h"

#include <Eigen/Core>

namespace posenc::bench {

void stream_scale(float* a, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) a[i] = s * a[i];
}

void stream_copy(const float* a, float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) b[i] = a[i];
}

void eigen_attention_gemm(const float* q, const float* k, const float* v, float* out, float* scores,
                          int64_t tq, int64_t tk, int64_t heads, int64_t d, int64_t h0,
                          int64_t h1) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Head = Eigen::Map<const Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;
  using OutHead = Eigen::Map<Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;
  const Eigen::OuterStride<> row(heads * d);  // one head of a [t, heads, d] tensor
  Eigen::Map<Matrix> s(scores, tq, tk);
  for (int64_t h = h0; h < h1; ++h) {
    const Head qh(q + h * d, tq, d, row), kh(k + h * d, tk, d, row), vh(v + h * d, tk, d, row);
    OutHead oh(out + h * d, tq, d, row);
    s.noalias() = qh * kh.transpose();
    oh.noalias() = s * vh;
  }
}

}  // namespace posenc::bench
