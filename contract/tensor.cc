#include "posenc/tensor.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <type_traits>
#include <vector>

#include "posenc/error.h"
#include "posenc/position_facts.h"

namespace posenc {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
  }
  return "?";
}

bool is_float(DType dtype) { return dtype != DType::i32 && dtype != DType::i64; }

bool Tensor::contiguous() const {
  int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    // Asked before validation too (required_variants): a size past int64 is no stride's value.
    if (__builtin_mul_overflow(expected, shape[d], &expected)) return false;
  }
  return true;
}

std::string Tensor::describe() const {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  s += "]";
  if (!contiguous()) {
    s += " strides [";
    for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(strides[d]);
    s += "]";
  }
  return s;
}

Tensor view(void* data, DType dtype, std::initializer_list<int64_t> shape) {
  Tensor t{.data = data, .dtype = dtype, .rank = static_cast<int>(shape.size())};
  std::copy(shape.begin(), shape.end(), t.shape.begin());
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.strides[d] = stride;
    // Wraps rather than overflowing (UB) on a huge shape; validation rejects such a view.
    __builtin_mul_overflow(stride, t.shape[d], &stride);
  }
  return t;
}

Tensor view(void* data, DType dtype, std::initializer_list<int64_t> shape,
            std::initializer_list<int64_t> strides) {
  Tensor t{.data = data, .dtype = dtype, .rank = static_cast<int>(shape.size())};
  std::copy(shape.begin(), shape.end(), t.shape.begin());
  std::copy(strides.begin(), strides.end(), t.strides.begin());
  return t;
}

namespace {

// x rounded to nearest, ties to even, on the grid of a binary format with `digits` significant
// bits, smallest normal exponent `min_exp` (evenly spaced subnormals below) and largest finite
// value `max_finite` (±∞ past it). One rounding, straight from double: no f32 step in between.
double round_to_format(double x, int digits, int min_exp, double max_finite) {
  if (!std::isfinite(x) || x == 0) return x;
  int e;
  std::frexp(x, &e);  // |x| = m·2^e, m in [0.5, 1)
  const double step = std::ldexp(1.0, std::max(e - 1, min_exp) - (digits - 1));
  const double r = std::nearbyint(x / step) * step;  // x / step is exact: a power of two
  return std::fabs(r) > max_finite ? std::copysign(INFINITY, x) : r;
}

constexpr double kMaxBf16 = 0x1.FEp127, kMaxF16 = 65504;

// A double whose exponent lies in a format's normal range (biased exponent bits in [lo, hi])
// rounds with integer arithmetic on its bits: adding half an ulp less one, plus the kept part's
// last bit, carries into the kept part exactly when rounding to nearest even goes up, and a carry
// out of the largest binade lands on ∞'s encoding. `dropped` fraction bits go; the exponent is
// rebiased. Returns -1 outside that range (subnormal results, ∞, NaN, 0): the caller takes the slow
// path.
int32_t round_normal(double value, int dropped, uint64_t lo, uint64_t hi, uint64_t rebias) {
  const auto bits = std::bit_cast<uint64_t>(value);
  const uint64_t magnitude = bits & ~(uint64_t{1} << 63), exponent = magnitude >> 52;
  if (exponent < lo || exponent > hi) return -1;
  const uint64_t half = (uint64_t{1} << (dropped - 1)) - 1;
  const uint64_t kept = (magnitude + half + ((magnitude >> dropped) & 1)) >> dropped;
  return static_cast<int32_t>((kept - rebias) | (bits >> 63 << 15));
}

uint16_t bf16_bits(double value) {
  // 7 fraction bits of 52; exponent 1023 − 126 … 1023 + 127, rebiased by (1023 − 127) << 7.
  if (const int32_t fast = round_normal(value, 45, 897, 1150, uint64_t{896} << 7); fast >= 0)
    return static_cast<uint16_t>(fast);
  const double r = round_to_format(value, 8, -126, kMaxBf16);
  const auto bits = std::bit_cast<uint32_t>(static_cast<float>(r));  // exact: r is on the grid
  const auto high = static_cast<uint16_t>(bits >> 16);
  return std::isnan(r) ? static_cast<uint16_t>(high | 0x0040) : high;  // a NaN stays a NaN
}

double from_bf16(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t f16_bits(double value) {
  // 10 fraction bits of 52; exponent 1023 − 14 … 1023 + 15, rebiased by (1023 − 15) << 10.
  if (const int32_t fast = round_normal(value, 42, 1009, 1038, uint64_t{1008} << 10); fast >= 0)
    return static_cast<uint16_t>(fast);
  const double r = round_to_format(value, 11, -14, kMaxF16);
  const uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  if (std::isnan(r)) return sign | 0x7E00;
  if (std::isinf(r)) return sign | 0x7C00;
  const double a = std::fabs(r);
  if (a < 0x1p-14) return sign | static_cast<uint16_t>(a * 0x1p24);  // subnormal: m·2⁻²⁴
  int e;
  const double m = std::frexp(a, &e);  // a = m·2^e: biased exponent e + 14, 10 fraction bits
  return sign | static_cast<uint16_t>((e + 14) << 10) | static_cast<uint16_t>(m * 2048 - 1024);
}

double from_f16(uint16_t bits) {
  const uint32_t exponent = (bits >> 10) & 0x1F, fraction = bits & 0x3FF;
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t f32;
  if (exponent == 0) {  // ±0 and subnormals: fraction·2⁻²⁴, exact in f32
    f32 = std::bit_cast<uint32_t>(static_cast<float>(fraction) * 0x1p-24f);
  } else if (exponent == 0x1F) {  // ±∞, NaN (payload kept)
    f32 = 0x7F800000 | fraction << 13;
  } else {
    f32 = (exponent + 112) << 23 | fraction << 13;
  }
  return std::bit_cast<float>(f32 | sign);
}

}  // namespace

double load(const Tensor& t, int64_t offset) {
  switch (t.dtype) {
    case DType::f32:
      return static_cast<const float*>(t.data)[offset];
    case DType::f64:
      return static_cast<const double*>(t.data)[offset];
    case DType::bf16:
      return from_bf16(static_cast<const uint16_t*>(t.data)[offset]);
    case DType::f16:
      return from_f16(static_cast<const uint16_t*>(t.data)[offset]);
    default:
      throw Error("dtype", dtype_name(t.dtype), "not a float dtype");
  }
}

void store(const Tensor& t, int64_t offset, double value) {
  switch (t.dtype) {
    case DType::f32:
      static_cast<float*>(t.data)[offset] = static_cast<float>(value);
      return;
    case DType::f64:
      static_cast<double*>(t.data)[offset] = value;
      return;
    case DType::bf16:
      static_cast<uint16_t*>(t.data)[offset] = bf16_bits(value);
      return;
    case DType::f16:
      static_cast<uint16_t*>(t.data)[offset] = f16_bits(value);
      return;
    default:
      throw Error("dtype", dtype_name(t.dtype), "not a float dtype");
  }
}

int64_t load_index(const Tensor& t, int64_t offset) {
  if (t.dtype == DType::i64) return static_cast<const int64_t*>(t.data)[offset];
  return static_cast<const int32_t*>(t.data)[offset];
}

int64_t checked_mul(int64_t a, int64_t b, const std::string& argument) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw Error(argument, std::to_string(a) + " * " + std::to_string(b), "size overflows int64");
  }
  return r;
}

namespace {

// Bytes from the first to one past the last element; 0 for an empty view.
int64_t span_bytes(const Tensor& t) {
  const ByteRange r = byte_range(t);
  return static_cast<int64_t>(r.hi - r.lo);
}

// a·b, with checked_mul's error (its argument name built only on overflow).
inline int64_t mul_or_throw(int64_t a, int64_t b, std::string_view name, const char* field) {
  int64_t r;
  POSENC_REQUIRE(!__builtin_mul_overflow(a, b, &r), std::string(name) + field,
                 std::to_string(a) + " * " + std::to_string(b), "size overflows int64");
  return r;
}

}  // namespace

namespace detail {

// check_view's checks in order, each with its message: run only when one fails.
void report_view(const Tensor& t, std::string_view name, int rank,
                 std::initializer_list<DType> dtypes) {
  POSENC_REQUIRE(t.rank == rank, std::string(name) + ".rank", t.rank,
                 "must be " + std::to_string(rank));
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end()) {
    std::string allowed;
    for (DType d : dtypes) allowed += (allowed.empty() ? "" : " or ") + std::string(dtype_name(d));
    throw Error(std::string(name) + ".dtype", dtype_name(t.dtype), "must be " + allowed);
  }
  int64_t numel = 1, last = 0;
  for (int d = 0; d < rank; ++d) {
    POSENC_REQUIRE(t.shape[d] >= 0, std::string(name) + ".shape[" + std::to_string(d) + "]",
                   t.shape[d], "must be >= 0");
    POSENC_REQUIRE(t.strides[d] >= 0, std::string(name) + ".strides[" + std::to_string(d) + "]",
                   t.strides[d], "must be >= 0");
    numel = mul_or_throw(numel, t.shape[d], name, ".shape");
  }
  if (numel > 0) {
    for (int d = 0; d < rank; ++d) {
      int64_t step = mul_or_throw(t.shape[d] - 1, t.strides[d], name, ".strides");
      POSENC_REQUIRE(!__builtin_add_overflow(last, step, &last), std::string(name) + ".strides",
                     t.strides[d], "extent overflows int64");
    }
    mul_or_throw(last + 1, static_cast<int64_t>(dtype_size(t.dtype)), name, ".strides");
    POSENC_REQUIRE(t.data != nullptr, std::string(name) + ".data", "null",
                   "must point to memory for a non-empty view");
  }
  throw Error(std::string(name), t.describe(), "is not a valid view");  // view_is_valid disagrees
}

void report_dtype(const Tensor& t, std::string_view name, const Tensor& like,
                  std::string_view like_name) {
  throw Error(std::string(name) + ".dtype", dtype_name(t.dtype),
              "must be " + std::string(dtype_name(like.dtype)) + " like " + std::string(like_name));
}

void report_dim(const Tensor& t, std::string_view name, int dim, int64_t expected) {
  require(false, std::string(name) + ".shape[" + std::to_string(dim) + "]",
          static_cast<double>(t.shape[dim]), "must be " + std::to_string(expected));
  std::abort();  // require(false, ...) throws
}

// check_no_self_overlap past its row-major test.
void check_no_self_overlap_strided(const Tensor& out, std::string_view name) {
  if (out.numel() == 0) return;
  std::array<int, kMaxRank> dims;
  int count = 0;
  for (int d = 0; d < out.rank; ++d)
    if (out.shape[d] > 1) dims[count++] = d;
  for (int i = 1; i < count; ++i)  // insertion sort by stride (std::sort's order for ≤ 16)
    for (int j = i; j > 0 && out.strides[dims[j]] < out.strides[dims[j - 1]]; --j)
      std::swap(dims[j], dims[j - 1]);
  int64_t extent = 1;  // elements spanned by the faster dims
  for (int i = 0; i < count; ++i) {
    const int d = dims[i];
    POSENC_REQUIRE(out.strides[d] >= extent,
                   std::string(name) + ".strides[" + std::to_string(d) + "]", out.strides[d],
                   "makes two output elements share memory");
    extent = out.strides[d] * (out.shape[d] - 1) + extent;
  }
}

}  // namespace detail

bool same_view(const Tensor& a, const Tensor& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.shape[d] != b.shape[d] || (a.shape[d] > 1 && a.strides[d] != b.strides[d])) return false;
  return true;
}

namespace {

// Byte range [lo, hi) covered by a view, split as rows of its largest stride: every element lies
// at lo + r·row_bytes + u with u < inner_bytes. row_bytes = 0 when the view has one row.
struct Footprint {
  uintptr_t lo = 0, hi = 0;
  int64_t row_bytes = 0, inner_bytes = 0;
};

Footprint footprint(const Tensor& t) {
  const int64_t size = static_cast<int64_t>(dtype_size(t.dtype));
  Footprint f;
  f.lo = reinterpret_cast<uintptr_t>(t.data);
  f.hi = f.lo + span_bytes(t);
  int outer = -1;
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] > 1 && (outer < 0 || t.strides[d] > t.strides[outer])) outer = d;
  if (outer < 0) return f;
  int64_t inner_last = 0;
  for (int d = 0; d < t.rank; ++d)
    if (d != outer) inner_last += (t.shape[d] - 1) * t.strides[d];
  f.row_bytes = t.strides[outer] * size;
  f.inner_bytes = (inner_last + 1) * size;
  return f;
}

}  // namespace

namespace detail {

// check_no_overlap for views whose byte ranges meet.
void check_no_overlap_meeting(const Tensor& out, std::string_view out_name, const Tensor& in,
                              std::string_view in_name, bool allow_identical) {
  if (span_bytes(out) == 0 || span_bytes(in) == 0) return;
  if (allow_identical && same_view(out, in)) return;
  const Footprint a = footprint(out), b = footprint(in);
  bool disjoint = a.hi <= b.lo || b.hi <= a.lo;
  // Views interleaved in one buffer (q, k and v packed per token) share rows of the same stride
  // but not the bytes inside a row: disjoint when their in-row intervals miss each other mod row.
  if (!disjoint && a.row_bytes > 0 && a.row_bytes == b.row_bytes && a.inner_bytes <= a.row_bytes &&
      b.inner_bytes <= b.row_bytes) {
    const int64_t row = a.row_bytes;
    const int64_t diff = static_cast<int64_t>(b.lo - a.lo);
    const int64_t shift = (diff % row + row) % row;
    // b's interval starts `shift` bytes into a's row frame (mod row).
    const bool b_after_a = shift >= a.inner_bytes && shift + b.inner_bytes <= row;
    disjoint = b_after_a;
  }
  POSENC_REQUIRE(
      disjoint, std::string(out_name) + ".data", std::to_string(a.lo),
      "overlaps " + std::string(in_name) + (allow_identical ? " without being the same view" : ""));
}

}  // namespace detail

namespace {

[[noreturn]] void position_out_of_range(std::string_view name, int64_t i, int64_t p, int64_t lo,
                                        int64_t hi) {
  throw Error(std::string(name) + "[" + std::to_string(i) + "]", std::to_string(p),
              "must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// Contiguous positions take one branch-free pass the compiler vectorizes even for SSE2 (no 64-bit
// compare): the OR of every position's bits (unsigned: a negative one sets the top bit) and the OR
// of p[i] ^ (p[0] + i), zero when the positions are consecutive. If the first is below a power of
// two L ≤ hi + 1 (and lo ≤ 0), all lie in [0, L) ⊂ [lo, hi]; the second is what a bias kernel needs
// next (checked_consecutive), in the same pass. Element by element, the range test was a quarter of
// a 32768-key ALiBi decode call; AVX-512 or AVX2 where the CPU has it (32768 cached i64 positions,
// AMD EPYC: the range test alone 4.5 µs with AVX2, 2.2 µs with AVX-512, both ORs 2.3 µs).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define POSENC_WIDE_SCAN __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define POSENC_WIDE_SCAN
#endif
POSENC_WIDE_SCAN void scan_positions(const int64_t* p, int64_t n, uint64_t* bits, uint64_t* drift) {
  uint64_t all = 0, differs = 0;
  for (int64_t i = 0; i < n; ++i) {
    all |= static_cast<uint64_t>(p[i]);
    differs |=
        static_cast<uint64_t>(p[i]) ^ (static_cast<uint64_t>(p[0]) + static_cast<uint64_t>(i));
  }
  *bits = all, *drift = differs;
}
POSENC_WIDE_SCAN void scan_positions(const int32_t* p, int64_t n, uint64_t* bits, uint64_t* drift) {
  uint32_t all = 0, differs = 0;
  for (int64_t i = 0; i < n; ++i) {
    all |= static_cast<uint32_t>(p[i]);
    differs |=
        static_cast<uint32_t>(p[i]) ^ (static_cast<uint32_t>(p[0]) + static_cast<uint32_t>(i));
  }
  *bits = all, *drift = differs;
}
#undef POSENC_WIDE_SCAN

// The first index whose position lies outside [lo, hi], or n; `consecutive` set for a contiguous
// view (see above), else left alone.
template <class Index>
int64_t first_out_of_range(const Index* p, int64_t stride, int64_t n, int64_t lo, int64_t hi,
                           std::optional<bool>& consecutive) {
  if (stride == 1 && n > 0) {
    uint64_t bits = 0, drift = 0;
    scan_positions(p, n, &bits, &drift);
    consecutive = drift == 0;
    if (lo <= 0 && hi >= 0 && bits < std::bit_floor(static_cast<uint64_t>(hi) + 1)) return n;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (p[i * stride] < lo || p[i * stride] > hi) return i;
  }
  return n;
}

// What check_positions found of the last two views it passed on this thread (a bias call checks
// q_positions, then k_positions): see checked_consecutive.
struct ConsecutiveMemo {
  const void* data = nullptr;
  DType dtype = DType::i64;
  int64_t n = -1, stride = 0;
  std::optional<bool> consecutive;

  bool describes(const Tensor& t) const {
    return data == t.data && dtype == t.dtype && n == t.shape[0] && stride == t.strides[0];
  }
};
thread_local std::array<ConsecutiveMemo, 2> t_memo;

ConsecutiveMemo* memo_of(const Tensor& positions) {
  for (ConsecutiveMemo& m : t_memo) {
    if (m.describes(positions)) return &m;
  }
  return nullptr;
}

}  // namespace

void check_positions(const Tensor& positions, std::string_view name, int64_t lo, int64_t hi) {
  // Typed, and the message built only on failure: kernels validate every position of every call.
  const int64_t n = positions.shape[0], stride = positions.strides[0];
  std::optional<bool> consecutive;
  const int64_t i =
      positions.dtype == DType::i64
          ? first_out_of_range(positions.as<int64_t>(), stride, n, lo, hi, consecutive)
          : first_out_of_range(positions.as<int32_t>(), stride, n, lo, hi, consecutive);
  // This view's entry is replaced, else the older one: a passed check leaves what it found.
  ConsecutiveMemo* m = memo_of(positions);
  if (m == nullptr) {
    t_memo[1] = t_memo[0];
    m = &t_memo[0];
  }
  *m = {positions.data, positions.dtype, n, stride, i < n ? std::nullopt : consecutive};
  if (i < n) position_out_of_range(name, i, load_index(positions, positions.offset(i)), lo, hi);
}

std::optional<bool> checked_consecutive(const Tensor& positions) {
  const ConsecutiveMemo* m = memo_of(positions);
  return m != nullptr ? m->consecutive : std::nullopt;
}

}  // namespace posenc
