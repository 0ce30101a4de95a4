// The fuzz decoder's reader (Decoder) and the helpers every family's decoder uses
// (fuzz/<family>_decode.cc, which define decode.h's decode<Call> and describe). Internal to the
// posenc_fuzz_decode library, the only code that includes FuzzedDataProvider.h.
#pragma once

#include <fmt/format.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "fuzz/decode.h"

namespace posenc::harness::decoding {

inline constexpr uint8_t kEveryImpl = 0xC0;  // byte 0 below this runs every implementation
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
inline constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

// Tensor data the kernels must carry through: NaN, infinities, signed zeros, subnormals, the
// largest finite f32 and values whose products overflow f32.
inline constexpr double kSpecialFloats[] = {
    kNaN,
    -kNaN,
    kInf,
    -kInf,
    0.0,
    -0.0,
    0x1p-149,
    -0x1p-149,
    0x1.fffffcp-127,
    0x1p-126,
    0x1.fffffep127,
    -0x1.fffffep127,
    1e30,
    -1e20,
    65504.0,
    1.0,
};
// Scalar parameters at and past the edges of every domain.
inline constexpr double kSpecialReals[] = {
    kNaN, kInf, -kInf, 0.0, -0.0, -1.0, 1.0, 0x1p-1074, 1e-300, 1e300, 1.0 + 0x1p-52, 2.0,
};
inline constexpr int64_t kSpecialIntegers[] = {
    0, -1, 1, 2, 3, kI64Min, kI64Max, kMaxPosition, kMaxPosition + 1, kI32Max, int64_t{1} << 62,
};

// One view of a call, named as in its view table.
struct Named {
  const char* name;
  Tensor* tensor;
  bool output;
};

// Bytes from the first element to one past the last; 0 for an empty view, −1 when a shape or stride
// is negative or the extent overflows int64 (a view corrupt() already made invalid).
inline int64_t extent_bytes(const Tensor& t) {
  int64_t last = 0, step;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 0 || t.strides[d] < 0) return -1;
    if (t.shape[d] == 0) return 0;
  }
  for (int d = 0; d < t.rank; ++d) {
    if (__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &step) ||
        __builtin_add_overflow(last, step, &last)) {
      return -1;
    }
  }
  int64_t bytes;
  if (__builtin_mul_overflow(last + 1, static_cast<int64_t>(dtype_size(t.dtype)), &bytes))
    return -1;
  return bytes;
}

// Element offset of the logical row-major index `linear`.
inline int64_t offset_of(const Tensor& t, int64_t linear) {
  int64_t off = 0;
  for (int d = t.rank - 1; d >= 0; --d) {
    off += linear % t.shape[d] * t.strides[d];
    linear /= t.shape[d];
  }
  return off;
}

inline void store_index(const Tensor& t, int64_t offset, int64_t value) {
  if (t.dtype == DType::i64) {
    t.as<int64_t>()[offset] = value;
  } else {
    t.as<int32_t>()[offset] = static_cast<int32_t>(value);  // i32 views wrap, as a cast would
  }
}

// A view into another allocation's memory, `offset` elements in (q and k packed per token).
inline Tensor subview(const Tensor& parent, int64_t offset, std::array<int64_t, kMaxRank> shape) {
  Tensor t = parent;
  t.data = static_cast<uint8_t*>(parent.data) + offset * dtype_size(parent.dtype);
  t.shape = shape;
  return t;
}

// The float dtypes of a call: `data` for its activations and outputs, `second` choosing the view a
// family allows to differ (absolute's table, attention's bias, rope's cache; 0: as the family's
// plain case). Decoded after every other choice (see decoded()).
struct Dtypes {
  DType data = DType::f32;
  int second = 0;
};

// Reads the problem from the bytes. Every choice defaults to the plain, valid case once the
// input runs out, so short inputs are ordinary problems.
class Decoder {
 public:
  Decoder(std::span<const uint8_t> bytes, Dtypes dtypes)
      : in_(bytes.data(), bytes.size()), dtypes_(dtypes) {}

  // The dtypes decoded last, known to the builder from the start.
  DType data() const { return dtypes_.data; }
  int second() const { return dtypes_.second; }
  // Reads them, after the builder: f32 and 0 when the input has run out.
  Dtypes dtypes() {
    constexpr DType kData[] = {DType::f32, DType::bf16, DType::f16};
    const DType data = kData[size(0, 2)];
    return {data, static_cast<int>(size(0, 3))};
  }
  size_t remaining() { return in_.remaining_bytes(); }

  int64_t size(int64_t lo, int64_t hi) { return in_.ConsumeIntegralInRange<int64_t>(lo, hi); }
  bool coin() { return in_.ConsumeBool(); }
  bool rare() { return in_.ConsumeIntegral<uint8_t>() >= 0xE0; }  // about 1 in 8
  Layout layout() { return static_cast<Layout>(size(0, 2)); }
  DType index_dtype() { return coin() ? DType::i32 : DType::i64; }
  int threads() { return rare() ? -1 : static_cast<int>(size(0, 4)); }  // 0: the default

  // Usually `usual`; else in [lo, hi], a special value or any double.
  double real(double usual, double lo, double hi) {
    const uint8_t mode = in_.ConsumeIntegral<uint8_t>();
    if (mode < 0x80) return usual;
    if (mode < 0xE0) return in_.ConsumeFloatingPointInRange(lo, hi);
    if (mode < 0xF8) return in_.PickValueInArray(kSpecialReals);
    return std::bit_cast<double>(in_.ConsumeIntegral<uint64_t>());
  }
  // One of `values`, the first once the input runs out.
  template <class T>
  T pick(std::initializer_list<const T> values) {
    return in_.PickValueInArray(values);
  }
  double uniform(double lo, double hi) { return in_.ConsumeFloatingPointInRange(lo, hi); }
  int64_t integer(int64_t usual, int64_t lo, int64_t hi) {
    const uint8_t mode = in_.ConsumeIntegral<uint8_t>();
    if (mode < 0x80) return usual;
    if (mode < 0xE0) return size(lo, hi);
    if (mode < 0xF8) return in_.PickValueInArray(kSpecialIntegers);
    return static_cast<int64_t>(in_.ConsumeIntegral<uint64_t>());
  }

  // Float data: uniform in [−scale, scale] (scale usually 1, sometimes any binade from the
  // subnormals to 2¹²⁷), then sometimes a few special values at chosen elements.
  void fill(const Tensor& t) {
    const uint32_t seed = in_.ConsumeIntegral<uint32_t>();
    const double scale = rare() ? std::ldexp(1.0, static_cast<int>(size(-149, 127))) : 1.0;
    Values(seed).fill(t, -scale, scale);
    const int64_t n = t.numel();
    if (n == 0 || !rare()) return;
    for (int64_t k = size(1, 8); k > 0; --k) {
      const int64_t at = offset_of(t, size(0, n - 1));
      store(t, at, in_.PickValueInArray(kSpecialFloats));
    }
  }

  // Positions in [lo, hi] (small ones, anywhere, a run, the top of the range), then sometimes a
  // few outside it: negative, just past hi, past 2²⁴, past int32, the int64 extremes.
  void fill_positions(const Tensor& t, int64_t lo, int64_t hi) {
    hi = std::max(hi, lo);
    const int64_t n = t.shape[0];
    Values values(in_.ConsumeIntegral<uint32_t>());
    switch (size(0, 3)) {
      case 0:
        values.fill_index(t, lo, std::min(hi, lo + 2 * n + 8));
        break;
      case 1:
        values.fill_index(t, lo, hi);
        break;
      case 2: {
        const int64_t first = size(lo, std::max(lo, hi - n + 1));
        for (int64_t i = 0; i < n; ++i) store_index(t, t.offset(i), first + i);
        break;
      }
      default:
        for (int64_t i = 0; i < n; ++i) store_index(t, t.offset(i), std::max(lo, hi - i));
    }
    if (n == 0 || !rare()) return;
    const int64_t outside[] = {
        lo - 1,  hi + 1,  hi + 2,  kMaxPosition + 1, -kMaxPosition,         kI32Max,
        kI32Min, kI64Max, kI64Min, int64_t{1} << 32, (int64_t{1} << 32) - 1};
    for (int64_t k = size(1, 4); k > 0; --k) {
      const int64_t at = t.offset(size(0, n - 1));
      store_index(t, at,
                  rare() ? static_cast<int64_t>(in_.ConsumeIntegral<uint64_t>())
                         : in_.PickValueInArray(outside));
    }
  }

  // An even rotary dim in [2, max], sometimes any integer.
  int64_t rotary_dim(int64_t max) {
    return rare() ? integer(max, -2, max + 3) : 2 * size(1, std::max<int64_t>(1, max / 2));
  }

  RopeScaling scaling(int64_t rotary_dim) {
    RopeScaling s;
    s.kind = static_cast<RopeScalingKind>(rare() ? size(0, 255) : size(0, 6));
    s.factor = real(4, 0.125, 64);
    s.alpha = real(2, 0.125, 64);
    s.max_position = integer(2048, 1, 1 << 20);
    s.original_max_position = integer(4096, 1, 1 << 20);
    s.seq_len = integer(0, 0, 1 << 21);
    s.beta_fast = real(32, 0.5, 64);
    s.beta_slow = real(1, 0.01, 4);
    s.mscale = real(0, 0, 2);
    s.mscale_all_dim = real(0, 0, 2);
    s.truncate = !coin();
    s.low_freq_factor = real(1, 0.25, 8);
    s.high_freq_factor = real(4, 0.5, 32);
    s.attention_factor = real(kNaN, 0.25, 4);
    if (s.kind == RopeScalingKind::longrope) {
      s.short_factor = factors(rotary_dim);
      s.long_factor = factors(rotary_dim);
    }
    return s;
  }

  // Corrupts, sometimes, one field of one view. It only ever shrinks a view or makes it invalid,
  // so an accepted call still lies inside the memory the arena gave it.
  void corrupt(const std::vector<Named>& views) {
    if (!rare()) return;
    Tensor& t = *views[size(0, static_cast<int64_t>(views.size()) - 1)].tensor;
    const int d = static_cast<int>(size(0, std::max(t.rank, 1) - 1));
    switch (size(0, 9)) {
      case 0:
        t.shape[d] = -size(1, 3);
        break;
      case 1:
        t.shape[d] = std::max<int64_t>(0, t.shape[d] - size(1, 3));
        break;
      case 2:  // numel or the byte extent overflows int64
        t.shape[d] = (int64_t{1} << 62) + size(0, 3);
        break;
      case 3:
        t.strides[d] = -size(1, 3);
        break;
      case 4:  // a broadcast input, or an output whose elements share memory
        t.strides[d] = 0;
        break;
      case 5:
        t.strides[d] = t.strides[d] * size(0, 7) / 8;
        break;
      case 6:
        t.rank = static_cast<int>((t.rank + size(1, kMaxRank)) % (kMaxRank + 1));
        break;
      case 7: {
        const auto dtype = static_cast<DType>(size(0, 5));
        if (dtype_size(dtype) <= dtype_size(t.dtype)) t.dtype = dtype;
        break;
      }
      case 8:
        t.data = nullptr;
        break;
      default: {  // an output placed on another view's memory
        std::vector<Tensor*> outputs;
        for (const Named& v : views)
          if (v.output) outputs.push_back(v.tensor);
        Tensor& out = *outputs[size(0, static_cast<int64_t>(outputs.size()) - 1)];
        const Tensor& other = *views[size(0, static_cast<int64_t>(views.size()) - 1)].tensor;
        // (Unchecked, a shape corrupt() set near 2⁶² overflowed here: UBSan, attention fuzzing.)
        if (&other != &out && extent_bytes(out) > 0 && extent_bytes(other) >= extent_bytes(out)) {
          out.data = other.data;
        }
      }
    }
  }

 private:
  // rotary_dim/2 longrope factors (sometimes one too few or too many), mostly in [1/8, 64].
  std::vector<double> factors(int64_t rotary_dim) {
    int64_t n = std::clamp<int64_t>(rotary_dim / 2, 0, 512);
    if (rare()) n = std::max<int64_t>(0, n + (coin() ? 1 : -1));
    std::vector<double> f(n);
    Values values(in_.ConsumeIntegral<uint32_t>());
    for (double& x : f) x = values.uniform(0.125, 64);
    if (n > 0 && rare()) {
      const int64_t at = size(0, n - 1);
      f[at] = in_.PickValueInArray(kSpecialReals);
    }
    return f;
  }

  FuzzedDataProvider in_;
  Dtypes dtypes_;
};

// The allocation size for a dim decoded from a parameter that may be invalid: validation
// rejects the parameter first, so the view only needs to exist.
inline int64_t bounded(int64_t n, int64_t max) { return std::clamp<int64_t>(n, 0, max); }

// q, q_out and, when the next coin says so, k and k_out of a rope-shaped call (mrope, vision_rope):
// the dtype, q's layout and values, q_out as q or its own layout, then k's heads, layout and
// values, k_out likewise, and rarely k or k_out dropped (an invalid call).
template <class Call>
void decode_activations(Decoder& in, Arena& arena, Call& c, int64_t tokens, int64_t hq,
                        int64_t head_dim) {
  const bool key = in.coin();
  const DType dtype = in.data();
  c.q = arena.alloc(dtype, {tokens, hq, head_dim}, in.layout());
  in.fill(c.q);
  c.q_out = in.coin() ? c.q : arena.alloc(dtype, {tokens, hq, head_dim}, in.layout());
  if (!key) return;
  const int64_t hk = in.size(1, 4);
  c.k = arena.alloc(dtype, {tokens, hk, head_dim}, in.layout());
  in.fill(*c.k);
  c.k_out = in.coin() ? *c.k : arena.alloc(dtype, {tokens, hk, head_dim}, in.layout());
  if (in.rare()) (in.coin() ? c.k : c.k_out).reset();
}

// Byte 0 picks the implementations; the builder reads the rest, afresh on every build. The dtypes
// come last, from bytes no other choice reads: a dry run finds where the builder stops (its reads
// never depend on a dtype), then they are read from there. An input written before the dtype
// dimension existed, and exhausted by the builder, still decodes to its f32 call.
template <class Call>
Decoded<Call> decoded(std::span<const uint8_t> bytes,
                      std::function<Call(Decoder&, Arena&)> builder) {
  Decoded<Call> d;
  if (!bytes.empty() && bytes[0] >= kEveryImpl) d.only = bytes[0] - kEveryImpl;
  std::vector<uint8_t> rest(bytes.begin() + (bytes.empty() ? 0 : 1), bytes.end());
  Decoder probe(rest, {});
  Arena scratch;
  builder(probe, scratch);
  const size_t unread = probe.remaining();
  const Dtypes dtypes = probe.dtypes();
  d.dtype = dtypes.data;
  d.problem.label = fmt::format("fuzz input of {} bytes", bytes.size());
  d.problem.build = [rest = std::move(rest), builder = std::move(builder), dtypes,
                     unread](Arena& arena) {
    Decoder in(rest, dtypes);
    Call call = builder(in, arena);
    if (in.remaining() != unread)
      throw std::logic_error("the fuzz decoder's reads depend on the dtype: they must not");
    return call;
  };
  return d;
}

inline std::string describe_views(const std::vector<Named>& views) {
  std::string s;
  for (const Named& v : views) s += fmt::format("{}={} ", v.name, v.tensor->describe());
  return s;
}

inline std::string number(double x) { return fmt::format("{:.17g}", x); }

// The views a call has, in its view table's order: inputs, then outputs.
template <class Call>
std::vector<Named> named_views(Call& c) {
  std::vector<Named> v;
  for_each_view(c, [&](const ViewField<Call>& field, Tensor& t) {
    v.push_back({field.name, &t, field.is_output()});
  });
  return v;
}

}  // namespace posenc::harness::decoding

namespace posenc::harness {

// What the families' decoders use.
using decoding::bounded;
using decoding::decoded;
using decoding::Decoder;
using decoding::describe_views;
using decoding::kNaN;
using decoding::named_views;
using decoding::number;
using decoding::subview;

}  // namespace posenc::harness
