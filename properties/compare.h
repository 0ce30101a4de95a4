// Element-wise comparison under a family's tolerance model: each element has a unit (one ulp of
// the magnitude the family's header names) and passes when |got − expected| ≤ bound · unit.
// NaN must meet NaN, ±∞ must meet the same ∞, and bound 0 means bit-for-bit equal.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "posenc/kernel.h"
#include "posenc/tensor.h"

namespace posenc::harness {

// One ulp of an f32 of magnitude |x| (the smallest subnormal step below the normal range; ∞ for
// ±∞ and NaN for NaN, so a unit taken from a non-finite magnitude cannot pass for a small one).
double ulp_f32(double x);
double ulp_f64(double x);
// One ulp of a bf16 (8 significant bits, f32's exponent range: 2¹⁶·ulp_f32) or an f16 (11 bits,
// smallest normal 2⁻¹⁴, subnormal step 2⁻²⁴) of magnitude |x|.
double ulp_bf16(double x);
double ulp_f16(double x);
// x rounded once to `dtype`, as store() rounds it (RNE, subnormals, overflow to ±∞).
double rounded_to(DType dtype, double x);
// One ulp of `dtype` (f32, f64, bf16 or f16) at magnitude |x|.
double ulp_of(DType dtype, double x);
// The bound an implementation states in f32 units, as it applies to an output of `dtype`: for bf16
// and f16 every nonzero bound is kLowPrecisionBound units of the output dtype (posenc/kernel.h).
double dtype_bound(DType dtype, double bound);
// The same from an implementation's per-dtype bounds (posenc::Bound): its own for bf16 and f16
// when it states them.
inline double dtype_bound(DType dtype, const Bound& bound) { return bound.of(dtype); }

// The tolerances peers test their kernels with, |got − expected| ≤ atol + rtol·|expected| on the
// outputs of one dtype: vLLM's bf16 rotary tests, FlashInfer's fp16 ones, XNNPACK's relative
// f32 and f16 checks. The report says whether a kernel would pass them, beside posenc's verdict.
struct PeerTolerance {
  const char* peer;
  DType dtype;
  double atol, rtol;
};
inline constexpr std::array<PeerTolerance, 4> kPeerTolerances = {{
    {"vLLM", DType::bf16, 1e-3, 1.6e-2},
    {"FlashInfer", DType::f16, 1e-3, 1e-3},
    {"XNNPACK", DType::f32, 0, 1e-4},
    {"XNNPACK", DType::f16, 0, 1e-2},
}};
// Per peer tolerance, the largest error as a multiple of what it allows (≤ 1 passes; ∞ for a
// mismatched NaN or infinity, or any error where it allows none), or -1 when no output of its
// dtype was compared.
using PeerExcess = std::array<double, kPeerTolerances.size()>;
inline constexpr PeerExcess kNoPeerExcess = {-1, -1, -1, -1};
void merge_peers(PeerExcess& into, const PeerExcess& other);

struct Comparison {
  bool ok = true;
  int64_t checked = 0;  // elements compared
  double worst = 0;     // largest error, in the family's tolerance units
  double bound = 0;
  std::string where;  // "out[3, 1, 7]" of the worst element
  double expected = 0, got = 0, error = 0, allowed = 0;
  PeerExcess peers = kNoPeerExcess;  // element comparisons only, not derived scalars

  // Folds another output's comparison into this one.
  void merge(const Comparison& other);
  std::string describe() const;  // "out[3, 1, 7]: expected …, got …, error … > allowed … (… units)"
};

// unit(index) gives the size of one tolerance unit at a logical index (rank ≤ 4, row-major).
using UnitFn = std::function<double(const int64_t* index)>;

Comparison compare(const std::string& name, const Tensor& expected, const Tensor& got, double bound,
                   const UnitFn& unit);
// One derived quantity (a norm, a dot product) against its exact value; `unit` is the size of one
// tolerance unit for it.
Comparison compare_scalar(const std::string& name, double expected, double got, double bound,
                          double unit);

// Folds one scalar check into `into`; `name()` is formatted only for the check it keeps (the
// first failure, else the largest error), so that passing checks cost no string.
template <class Name>
void merge_scalar(Comparison& into, double expected, double got, double bound, double unit,
                  Name&& name) {
  Comparison c = compare_scalar(std::string(), expected, got, bound, unit);
  if ((into.ok && !c.ok) || (into.ok == c.ok && c.worst > into.worst)) c.where = name();
  into.merge(c);
}

// Bounds for relations checked against exact math rather than against the reference. The
// reference rounds once from fp64, so it lies within ½ unit of the exact value in every family's
// unit (each unit is at least one ulp of the value it measures); a kernel within `bound` units of
// the reference is then within bound + ½ of exact, and two of its outputs within 2·bound + 1 of
// each other.
inline double exact_bound(double bound) { return bound + 0.5; }
inline double metamorphic_bound(double bound) { return 2 * bound + 1; }

}  // namespace posenc::harness
