#include "properties/compare.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>

#include "posenc/kernel.h"

namespace posenc::harness {

// An ulp of ±∞ is ∞ and of NaN is NaN: a unit taken from a non-finite magnitude says so, rather
// than passing for the ulp of 1 (frexp's exponent of ∞ is unspecified; glibc gives 0).
double ulp_f32(double x) {
  x = std::fabs(x);
  if (!std::isfinite(x)) return x;
  if (!(x >= 0x1p-126)) return 0x1p-149;
  int exponent;
  std::frexp(x, &exponent);  // x = m·2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, exponent - 24);
}

double ulp_f64(double x) {
  x = std::fabs(x);
  if (!std::isfinite(x)) return x;
  if (!(x >= 0x1p-1022)) return 0x1p-1074;
  int exponent;
  std::frexp(x, &exponent);
  return std::ldexp(1.0, exponent - 53);
}

double ulp_bf16(double x) { return std::fabs(x) < 0x1p-126 ? 0x1p-133 : ulp_f32(x) * 0x1p16; }

double ulp_f16(double x) {
  x = std::fabs(x);
  if (!std::isfinite(x)) return x;
  if (!(x >= 0x1p-14)) return 0x1p-24;
  int exponent;
  std::frexp(x, &exponent);
  return std::ldexp(1.0, exponent - 11);
}

double rounded_to(DType dtype, double x) {
  alignas(8) unsigned char element[8];
  const Tensor t = view(element, dtype, {1});
  store(t, 0, x);
  return load(t, 0);
}

double ulp_of(DType dtype, double x) {
  switch (dtype) {
    case DType::f64:
      return ulp_f64(x);
    case DType::bf16:
      return ulp_bf16(x);
    case DType::f16:
      return ulp_f16(x);
    default:
      return ulp_f32(x);
  }
}

double dtype_bound(DType dtype, double bound) {
  const bool low_precision = dtype == DType::bf16 || dtype == DType::f16;
  return low_precision && bound > 0 ? kLowPrecisionBound : bound;
}

void merge_peers(PeerExcess& into, const PeerExcess& other) {
  for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], other[i]);
}

void Comparison::merge(const Comparison& other) {
  checked += other.checked;
  merge_peers(peers, other.peers);
  const bool take = (ok && !other.ok) || (ok == other.ok && other.worst > worst);
  if (take) {
    worst = other.worst;
    where = other.where;
    expected = other.expected;
    got = other.got;
    error = other.error;
    allowed = other.allowed;
  }
  ok = ok && other.ok;
  bound = std::max(bound, other.bound);
}

std::string Comparison::describe() const {
  if (where.empty()) return fmt::format("{} elements, all equal", checked);
  return fmt::format(
      "{}: expected {:.9g}, got {:.9g}, error {:.3g} {} allowed {:.3g} ({:.3g} units, bound "
      "{:.3g})",
      where, expected, got, error, ok ? "<=" : ">", allowed, worst, bound);
}

namespace {

bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

Comparison compare(const std::string& name, const Tensor& expected, const Tensor& got, double bound,
                   const UnitFn& unit) {
  Comparison c;
  c.bound = bound;
  if (expected.numel() == 0) return c;
  std::array<int64_t, kMaxRank> index{};
  for (;;) {
    int64_t expected_off = 0, got_off = 0;
    for (int d = 0; d < expected.rank; ++d) {
      expected_off += index[d] * expected.strides[d];
      got_off += index[d] * got.strides[d];
    }
    const double e = load(expected, expected_off), g = load(got, got_off);
    ++c.checked;
    double units, error, allowed;
    bool pass;
    if (std::isnan(e) || std::isinf(e) || std::isnan(g) || std::isinf(g)) {
      pass = std::isnan(e) ? std::isnan(g) : e == g;
      error = pass ? 0 : INFINITY;
      allowed = 0;
      units = pass ? 0 : INFINITY;
    } else {
      // A unit that cannot be stated (NaN from special inputs) allows any finite error.
      double u = unit(index.data());
      if (std::isnan(u)) u = INFINITY;
      error = std::fabs(g - e);
      allowed = bound == 0 ? 0 : bound * u;
      units = error == 0 ? 0 : error / u;
      pass = bound == 0 ? same_bits(e, g) : error <= allowed;
    }
    for (size_t p = 0; p < kPeerTolerances.size(); ++p) {
      const PeerTolerance& t = kPeerTolerances[p];
      if (got.dtype != t.dtype) continue;
      const double err = std::isfinite(error) ? error : (same_bits(e, g) || e == g ? 0 : INFINITY);
      const double peer_allowed = t.atol + t.rtol * std::fabs(e);
      const double excess = err == 0 ? 0 : peer_allowed > 0 ? err / peer_allowed : INFINITY;
      c.peers[p] = std::max(c.peers[p], excess);
    }
    // Keep the first failure over any pass, then the largest error.
    if ((!pass && c.ok) || (pass == c.ok && units > c.worst) || c.where.empty()) {
      c.ok = c.ok && pass;
      c.worst = units;
      std::string at = name + "[";
      for (int d = 0; d < expected.rank; ++d) at += (d ? ", " : "") + std::to_string(index[d]);
      c.where = at + "]";
      c.expected = e;
      c.got = g;
      c.error = error;
      c.allowed = allowed;
    }
    int d = expected.rank - 1;
    while (d >= 0 && ++index[d] == expected.shape[d]) index[d--] = 0;
    if (d < 0) break;
  }
  return c;
}

Comparison compare_scalar(const std::string& name, double expected, double got, double bound,
                          double unit) {
  Comparison c;
  c.bound = bound;
  c.checked = 1;
  c.where = name;
  c.expected = expected;
  c.got = got;
  c.error = std::fabs(got - expected);
  c.allowed = bound * unit;
  c.worst = c.error / unit;
  c.ok = std::isnan(expected) ? std::isnan(got) : c.error <= c.allowed;
  if (!std::isfinite(c.error) && !(std::isnan(expected) && std::isnan(got))) c.worst = INFINITY;
  return c;
}

}  // namespace posenc::harness
