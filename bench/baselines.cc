// No Eigen-internal threads: its GEMM sees -fopenmp here, and each yardstick picks its threads.
#define EIGEN_DONT_PARALLELIZE
#include "bench/baselines.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "bench/plain_elements.h"

namespace posenc::bench {

void stream_scale(float* a, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) a[i] = s * a[i];
}

void stream_copy(const float* a, float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) b[i] = a[i];
}

void stream_fill(float* a, int64_t n, float v) {
  for (int64_t i = 0; i < n; ++i) a[i] = v;
}

void stream_fill_nontemporal(float* a, int64_t n, float v) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i < n && reinterpret_cast<uintptr_t>(a + i) % 64 != 0; ++i) a[i] = v;
  for (const __m512 x = _mm512_set1_ps(v); i + 16 <= n; i += 16) _mm512_stream_ps(a + i, x);
#elif defined(__AVX__)
  for (; i < n && reinterpret_cast<uintptr_t>(a + i) % 32 != 0; ++i) a[i] = v;
  for (const __m256 x = _mm256_set1_ps(v); i + 8 <= n; i += 8) _mm256_stream_ps(a + i, x);
#elif defined(__SSE2__)
  for (; i < n && reinterpret_cast<uintptr_t>(a + i) % 16 != 0; ++i) a[i] = v;
  for (const __m128 x = _mm_set1_ps(v); i + 4 <= n; i += 4) _mm_stream_ps(a + i, x);
#endif
  for (; i < n; ++i) a[i] = v;
#if defined(__SSE2__)
  _mm_sfence();  // as the kernels' hwy::FlushStream: the stores are visible when the pass returns
#endif
}

#if defined(__AVX512F__)
using FmaVector = __m512;
int fma_lanes() { return 16; }
static FmaVector fma_set(float v) { return _mm512_set1_ps(v); }
static FmaVector fma(FmaVector a, FmaVector b, FmaVector c) { return _mm512_fmadd_ps(a, b, c); }
static float fma_sum(FmaVector v) { return _mm512_reduce_add_ps(v); }
#elif defined(__FMA__)
using FmaVector = __m256;
int fma_lanes() { return 8; }
static FmaVector fma_set(float v) { return _mm256_set1_ps(v); }
static FmaVector fma(FmaVector a, FmaVector b, FmaVector c) { return _mm256_fmadd_ps(a, b, c); }
static float fma_sum(FmaVector v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}
#else
using FmaVector = float;
int fma_lanes() { return 1; }
static FmaVector fma_set(float v) { return v; }
static FmaVector fma(FmaVector a, FmaVector b, FmaVector c) { return std::fma(a, b, c); }
static float fma_sum(FmaVector v) { return v; }
#endif

float fma_chains(int64_t rounds) {
  FmaVector acc[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j) acc[j] = fma_set(static_cast<float>(j));
  const FmaVector half = fma_set(0.5f), one = fma_set(1.0f);  // acc → 2: no overflow, no subnormal
  for (int64_t r = 0; r < rounds; ++r) {
    for (int j = 0; j < kFmaChains; ++j) acc[j] = fma(acc[j], half, one);
  }
  float sum = 0;
  for (int j = 0; j < kFmaChains; ++j) sum += fma_sum(acc[j]);
  return sum;
}

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Head = Eigen::Map<const Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using OutHead = Eigen::Map<Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;

}  // namespace

void eigen_attention_gemm(const float* q, const float* k, const float* v, float* out, float* scores,
                          int64_t tq, int64_t tk, int64_t heads, int64_t d, int64_t h0,
                          int64_t h1) {
  const Eigen::OuterStride<> row(heads * d);  // one head of a [t, heads, d] tensor
  Eigen::Map<Matrix> s(scores, tq, tk);
  for (int64_t h = h0; h < h1; ++h) {
    const Head qh(q + h * d, tq, d, row), kh(k + h * d, tk, d, row), vh(v + h * d, tk, d, row);
    OutHead oh(out + h * d, tq, d, row);
    s.noalias() = qh * kh.transpose();
    oh.noalias() = s * vh;
  }
}

void naive_attention(const float* q, const float* k, const float* v, float* out,
                     float* const* scores, int64_t tq, int64_t tk, int64_t heads, int64_t d,
                     float scale, int threads) {
  const Eigen::OuterStride<> row(heads * d);
  auto head = [&](int64_t h, float* scratch) {
    const Head qh(q + h * d, tq, d, row), kh(k + h * d, tk, d, row), vh(v + h * d, tk, d, row);
    OutHead oh(out + h * d, tq, d, row);
    Eigen::Map<Matrix> s(scratch, tq, tk);
    s.noalias() = scale * (qh * kh.transpose());
    s = (s.colwise() - s.rowwise().maxCoeff()).array().exp();
    s.array().colwise() /= s.rowwise().sum().array();
    oh.noalias() = s * vh;
  };
  if (threads == 1) {
    for (int64_t h = 0; h < heads; ++h) head(h, scores[0]);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t h = 0; h < heads; ++h) head(h, scores[omp_get_thread_num()]);
}

// ---- Plain peers ----

namespace {

using namespace plain;

// A per-call scratch array that only grows (the peers run on one caller at a time).
template <class T>
T* scratch(int64_t n) {
  static T* data = nullptr;
  static int64_t capacity = 0;
  if (n > capacity) {
    std::free(data);
    data = static_cast<T*>(std::malloc(static_cast<size_t>(n) * sizeof(T)));
    capacity = n;
  }
  return data;
}

}  // namespace

void plain_rope(void* q, Element e, int64_t tokens, int64_t heads, int64_t head_dim,
                const int64_t* positions, const float* cos, const float* sin, int threads) {
  const int64_t half = head_dim / 2;
  with_element(e, [&](auto element) {
    using E = decltype(element);
    E* data = static_cast<E*>(q);
    over_rows(tokens, threads, [&](int64_t t) {
      const float* c = cos + positions[t] * half;
      const float* s = sin + positions[t] * half;
      for (int64_t h = 0; h < heads; ++h) {
        E* x = data + (t * heads + h) * head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const float a = widen(x[i]), b = widen(x[i + half]);
          x[i] = narrow<E>(a * c[i] - b * s[i]);
          x[i + half] = narrow<E>(b * c[i] + a * s[i]);
        }
      }
    });
  });
}

void plain_alibi(void* bias, Element e, const float* slopes, int64_t heads, const int64_t* q_pos,
                 int64_t tq, const int64_t* k_pos, int64_t tk, bool causal, int threads) {
  with_element(e, [&](auto element) {
    using E = decltype(element);
    E* data = static_cast<E*>(bias);
    const E minus_inf = narrow<E>(-std::numeric_limits<float>::infinity());
    over_rows(heads * tq, threads, [&](int64_t r) {
      const float slope = slopes[r / tq];
      const int64_t qp = q_pos[r % tq];
      E* out = data + r * tk;
      for (int64_t j = 0; j < tk; ++j) {
        const int64_t dist = qp - k_pos[j];
        if (causal)
          out[j] = dist < 0 ? minus_inf : narrow<E>(-slope * static_cast<float>(dist));
        else
          out[j] = narrow<E>(-slope * static_cast<float>(dist < 0 ? -dist : dist));
      }
    });
  });
}

void plain_t5(void* bias, Element e, const void* table, int64_t buckets, int64_t heads,
              bool bidirectional, int64_t max_distance, const int64_t* q_pos, int64_t tq,
              const int64_t* k_pos, int64_t tk, int threads) {
  const auto [q_min, q_max] = std::minmax_element(q_pos, q_pos + tq);
  const auto [k_min, k_max] = std::minmax_element(k_pos, k_pos + tk);
  const int64_t lowest = *k_min - *q_max, count = *k_max - *q_min - lowest + 1;
  int32_t* bucket_of = scratch<int32_t>(count);
  const int64_t n = bidirectional ? buckets / 2 : buckets, exact = n / 2;
  const float log_ratio = static_cast<float>(std::log(static_cast<double>(max_distance) / exact));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t rp = lowest + i;
    int64_t bucket = bidirectional && rp > 0 ? n : 0;
    const int64_t r = bidirectional ? (rp < 0 ? -rp : rp) : (rp < 0 ? -rp : 0);
    if (r < exact) {
      bucket += r;
    } else {
      const float f = std::log(static_cast<float>(r) / static_cast<float>(exact)) / log_ratio *
                      static_cast<float>(n - exact);
      bucket += std::min<int64_t>(n - 1, exact + static_cast<int64_t>(f));
    }
    bucket_of[i] = static_cast<int32_t>(bucket);
  }
  with_element(e, [&](auto element) {
    using E = decltype(element);
    const E* values = static_cast<const E*>(table);
    E* data = static_cast<E*>(bias);
    over_rows(heads * tq, threads, [&](int64_t r) {
      const int64_t h = r / tq, qp = q_pos[r % tq];
      const int32_t* row_buckets = bucket_of - lowest - qp;  // indexed by k_pos
      E* out = data + r * tk;
      for (int64_t j = 0; j < tk; ++j) out[j] = values[row_buckets[k_pos[j]] * heads + h];
    });
  });
}

void wait_for_part(const std::atomic<uint64_t>& flag, uint64_t value) {
  for (int64_t spins = 0; flag.load(std::memory_order_acquire) != value && spins < 100'000'000;
       ++spins)
    __builtin_ia32_pause();
}

void omp_handoff(int threads) {
  static std::atomic<uint64_t> started{0};
  const uint64_t call = started.load(std::memory_order_relaxed) + 1;
#pragma omp parallel num_threads(threads)
  {
    if (omp_get_thread_num() == 1) started.store(call, std::memory_order_release);
    if (omp_get_thread_num() == 0 && omp_get_num_threads() > 1) wait_for_part(started, call);
  }
}

}  // namespace posenc::bench
