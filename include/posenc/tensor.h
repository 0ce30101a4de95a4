// Non-owning strided tensor views. Shapes and strides count elements, not bytes, as in DLPack, so
// padded, permuted and sliced views need no copy.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace posenc {

enum class DType : uint8_t { f32, f64, bf16, f16, i32, i64 };

const char* dtype_name(DType dtype);
// Inline, as numel(): validation asks for both on every view of every call.
inline size_t dtype_size(DType dtype) {
  constexpr size_t kSize[] = {4, 8, 2, 2, 4, 8};  // f32, f64, bf16, f16, i32, i64
  const auto index = static_cast<size_t>(dtype);
  return index < std::size(kSize) ? kSize[index] : 0;
}
bool is_float(DType dtype);

inline constexpr int kMaxRank = 4;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};
  std::array<int64_t, kMaxRank> strides{};  // in elements

  int64_t numel() const {  // assumes validated shape
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= shape[d];
    return n;
  }
  // Element offset of a multi-index; the caller keeps it in range.
  int64_t offset(int64_t i0) const { return i0 * strides[0]; }
  int64_t offset(int64_t i0, int64_t i1) const { return i0 * strides[0] + i1 * strides[1]; }
  int64_t offset(int64_t i0, int64_t i1, int64_t i2) const {
    return i0 * strides[0] + i1 * strides[1] + i2 * strides[2];
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
  bool contiguous() const;
  std::string describe() const;  // "f32[3, 4, 8] strides [32, 8, 1]"
};

// A row-major contiguous view.
Tensor view(void* data, DType dtype, std::initializer_list<int64_t> shape);
// A view with explicit strides (elements).
Tensor view(void* data, DType dtype, std::initializer_list<int64_t> shape,
            std::initializer_list<int64_t> strides);

// Reads one element as double / writes one element rounded once from double (to nearest, ties to
// even; ±∞ past the dtype's largest finite value). Any float dtype: f32, f64, bf16, f16.
double load(const Tensor& t, int64_t offset);
void store(const Tensor& t, int64_t offset, double value);
// Reads one element of an i32 or i64 tensor.
int64_t load_index(const Tensor& t, int64_t offset);

// ---- Validation helpers shared by every family's validate(). All throw posenc::Error. ----
// Names are views: a valid call builds no string. Each check is an inline test (a decode step
// validates a handful of views per call, and out-of-line checks were most of its time) with its
// message built out of line, only when it fails.

// a * b, or Error naming `argument` on int64 overflow.
int64_t checked_mul(int64_t a, int64_t b, const std::string& argument);

namespace detail {
// Whether check_view would not throw: rank, a listed dtype, non-negative shape and strides, an
// extent that fits in int64 bytes, data non-null when the view is non-empty.
inline bool view_is_valid(const Tensor& t, int rank, std::initializer_list<DType> dtypes) {
  if (t.rank != rank) return false;
  bool listed = false;
  for (DType d : dtypes) listed |= d == t.dtype;
  if (!listed) return false;
  int64_t numel = 1, last = 0, step = 0;
  bool ok = true;
  for (int d = 0; d < rank; ++d) {
    ok &= t.shape[d] >= 0 && t.strides[d] >= 0;
    ok &= !__builtin_mul_overflow(numel, t.shape[d], &numel);
  }
  if (!ok) return false;
  if (numel == 0) return true;
  for (int d = 0; d < rank; ++d) {
    ok &= !__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &step);
    ok &= !__builtin_add_overflow(last, step, &last);
  }
  int64_t bytes;
  ok &= !__builtin_mul_overflow(last + 1, static_cast<int64_t>(dtype_size(t.dtype)), &bytes);
  return ok && t.data != nullptr;
}
// The failing checks' messages (each throws).
[[noreturn, gnu::cold]] void report_view(const Tensor& t, std::string_view name, int rank,
                                         std::initializer_list<DType> dtypes);
[[noreturn, gnu::cold]] void report_dtype(const Tensor& t, std::string_view name,
                                          const Tensor& like, std::string_view like_name);
[[noreturn, gnu::cold]] void report_dim(const Tensor& t, std::string_view name, int dim,
                                        int64_t expected);
void check_no_self_overlap_strided(const Tensor& out, std::string_view name);
void check_no_overlap_meeting(const Tensor& out, std::string_view out_name, const Tensor& in,
                              std::string_view in_name, bool allow_identical);
}  // namespace detail

// Checks rank, dtype, non-negative shape and strides, that the extent fits in int64 bytes and that
// data is non-null when the view is non-empty.
inline void check_view(const Tensor& t, std::string_view name, int rank,
                       std::initializer_list<DType> dtypes) {
  if (__builtin_expect(!detail::view_is_valid(t, rank, dtypes), 0))
    detail::report_view(t, name, rank, dtypes);
}
// Checks t.dtype == like.dtype: a family whose outputs (or peer inputs) share their input's dtype.
inline void check_same_dtype(const Tensor& t, std::string_view name, const Tensor& like,
                             std::string_view like_name) {
  if (__builtin_expect(t.dtype != like.dtype, 0)) detail::report_dtype(t, name, like, like_name);
}
// Checks t.shape[dim] == expected.
inline void check_dim(const Tensor& t, std::string_view name, int dim, int64_t expected) {
  if (__builtin_expect(t.shape[dim] != expected, 0)) detail::report_dim(t, name, dim, expected);
}
// An output must not have two indices that share an element (stride 0, overlapping strides).
// Row-major contiguous views (each stride the product of the later extents, where the extent is
// > 1), the common case, pass without the sort.
inline void check_no_self_overlap(const Tensor& out, std::string_view name) {
  int64_t dense = 1;
  bool row_major = true;
  for (int d = out.rank - 1; d >= 0; --d) {
    row_major &= out.shape[d] <= 1 || out.strides[d] == dense;
    dense *= out.shape[d];
  }
  if (!row_major) detail::check_no_self_overlap_strided(out, name);
}
bool same_view(const Tensor& a, const Tensor& b);
// The bytes [lo, hi) from a view's first element to one past its last; empty for an empty view.
// Views whose ranges do not meet share no memory, whatever their strides.
struct ByteRange {
  uintptr_t lo = 0, hi = 0;
  bool meets(const ByteRange& other) const { return lo < other.hi && other.lo < hi; }
};
// Of a valid view (check_view).
inline ByteRange byte_range(const Tensor& t) {
  const auto lo = reinterpret_cast<uintptr_t>(t.data);
  int64_t last = 0;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] == 0) return {lo, lo};
    last += (t.shape[d] - 1) * t.strides[d];
  }
  return {lo, lo + static_cast<uintptr_t>((last + 1) * static_cast<int64_t>(dtype_size(t.dtype)))};
}
// An output must not share memory with an input, unless `allow_identical` and the two views are
// the same (data, dtype, shape and strides): that is the in-place case.
inline void check_no_overlap(const Tensor& out, std::string_view out_name, const Tensor& in,
                             std::string_view in_name, bool allow_identical = false) {
  if (!byte_range(out).meets(byte_range(in))) return;
  detail::check_no_overlap_meeting(out, out_name, in, in_name, allow_identical);
}
// Every index in [lo, hi]; the error names "name[i]" and the value.
void check_positions(const Tensor& positions, std::string_view name, int64_t lo, int64_t hi);

// Positions are token indices: they lie in [0, kMaxPosition]. The fp64 oracles are accurate to a
// fraction of an f32 ulp up to here (angle error ≈ p·2⁻⁵³).
inline constexpr int64_t kMaxPosition = int64_t{1} << 24;

}  // namespace posenc
