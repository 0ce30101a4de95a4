// Shared by alibi and t5, whose bias[h, i, j] depends only on the head and on k_pos[j] − q_pos[i].
// When the keys' positions are consecutive (a KV cache), row (h, i) is a window of one line per
// head: line_h[x] = value(h, x_first + x), and the row starts at x = k_pos[0] − q_pos[i] − x_first.
// The lines take heads · (tk + spread of q_pos) evaluations; every row is then a copy, written
// with non-temporal stores when the bias is too large for the caches (a normal store first reads
// the line it overwrites, and the bias is write-only).
//
// Include after hwy/highway.h in a file compiled for every target (foreach_target).
#ifndef POSENC_OPTIMIZED_BIAS_LINES_SHARED
#define POSENC_OPTIMIZED_BIAS_LINES_SHARED
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "optimized/reusable.h"
#include "posenc/position_facts.h"
#include "posenc/tensor.h"

namespace posenc::optimized {

// Whether to stream the bias past the caches: when it is larger than a last-level cache could
// keep (sysconf's figure is not trustworthy in a VM: 320 MiB here, for 32 MiB).
inline bool stream_bias(const Tensor& bias) {
  return bias.strides[2] == 1 &&
         bias.numel() * static_cast<int64_t>(dtype_size(bias.dtype)) > (int64_t{16} << 20);
}

// Whether rows are windows of per-head lines (keys consecutive, output rows contiguous) and where
// each row's window starts.
struct BiasLines {
  bool windows = false;
  int64_t first = 0;   // x_first: the smallest k_pos − q_pos
  int64_t length = 0;  // of each line
  std::vector<int64_t> start;
  int64_t tq = 0, tk = 0;

  BiasLines(const std::vector<int64_t>& q_pos, const Tensor& k_positions, const Tensor& bias) {
    tq = static_cast<int64_t>(q_pos.size());
    tk = k_positions.shape[0];
    if (tq == 0 || tk == 0 || bias.strides[2] != 1) return;
    // validate() has just checked the keys and learned this in the same pass (contiguous keys);
    // the loop below answers only what it did not look at (strided keys).
    const std::optional<bool> known = checked_consecutive(k_positions);
    const bool consecutive =
        known ? *known
        : k_positions.dtype == DType::i64
            ? is_consecutive(k_positions.as<int64_t>(), k_positions.strides[0], tk)
            : is_consecutive(k_positions.as<int32_t>(), k_positions.strides[0], tk);
    if (!consecutive) return;
    const auto [lo, hi] = std::minmax_element(q_pos.begin(), q_pos.end());
    const int64_t k0 = load_index(k_positions, 0);
    first = k0 - *hi;
    length = tk + *hi - *lo;
    windows = true;
    for (const int64_t qp : q_pos) start.push_back(k0 - qp - first);
  }

  // Whether one line of values per head costs at most a quarter of the bias itself (with few
  // queries, computing the rows directly is cheaper).
  bool worth_values() const { return windows && length * 4 <= tq * tk; }

 private:
  template <class Index>
  static bool is_consecutive(const Index* p, int64_t stride, int64_t n) {
    for (int64_t j = 1; j < n; ++j) {
      if (p[j * stride] != p[0] + j) return false;
    }
    return true;
  }
};

}  // namespace posenc::optimized
#endif  // POSENC_OPTIMIZED_BIAS_LINES_SHARED

#if defined(POSENC_OPTIMIZED_BIAS_LINES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POSENC_OPTIMIZED_BIAS_LINES_INL_H_
#undef POSENC_OPTIMIZED_BIAS_LINES_INL_H_
#else
#define POSENC_OPTIMIZED_BIAS_LINES_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[0, n) (contiguous) from vector_at(d, j), a full vector of dst[j, j + Lanes) in lanes of L
// (float, or the bits of a 16-bit type), and scalar_at(j), the element dst[j]: both must give the
// same values. Non-temporal when `stream` (call hwy::FlushStream() before the data is handed to
// another thread).
template <class L, class VectorAt, class ScalarAt>
HWY_INLINE void WriteRow(L* HWY_RESTRICT dst, int64_t n, bool stream, const VectorAt& vector_at,
                         const ScalarAt& scalar_at) {
  const hn::ScalableTag<L> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  if (stream) {  // element by element up to an aligned address, then whole aligned vectors
    const size_t align = static_cast<size_t>(N) * sizeof(L);
    for (; j < n && reinterpret_cast<uintptr_t>(dst + j) % align != 0; ++j) dst[j] = scalar_at(j);
    for (; j + N <= n; j += N) hn::Stream(vector_at(d, j), d, dst + j);
  } else {
    for (; j + N <= n; j += N) hn::StoreU(vector_at(d, j), d, dst + j);
  }
  for (; j < n; ++j) dst[j] = scalar_at(j);
}

// Rows [begin, end) (row = h·tq + i) of `bias` as windows of `lines` (one line per head), in lanes
// of L (float, or the bits of a 16-bit dtype).
template <class L>
HWY_INLINE void CopyWindows(const BiasLines& lines, const L* line_values, const Tensor& bias,
                            int64_t begin, int64_t end, bool stream) {
  const int64_t tq = bias.shape[1], tk = bias.shape[2];
  for (int64_t row = begin; row < end; ++row) {
    const int64_t h = row / tq, i = row % tq;
    const L* src = line_values + h * lines.length + lines.start[i];
    WriteRow(
        bias.as<L>() + bias.offset(h, i, 0), tk, stream,
        [src](auto d, int64_t j) { return hn::LoadU(d, src + j); },
        [src](int64_t j) { return src[j]; });
  }
  if (stream) hwy::FlushStream();
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POSENC_OPTIMIZED_BIAS_LINES_INL_H_
