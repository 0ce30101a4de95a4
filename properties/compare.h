// Element-wise comparison under a family's tolerance model: each element has a unit (one ulp of
// the magnitude the family's header names) and passes when |got − expected| ≤ bound · unit.
// NaN must meet NaN, ±∞ must meet the same ∞, and bound 0 means bit-for-bit equal.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "posenc/tensor.h"

namespace posenc::harness {

// One ulp of an f32 of magnitude |x| (the smallest subnormal step below the normal range).
double ulp_f32(double x);
double ulp_f64(double x);

struct Comparison {
  bool ok = true;
  int64_t checked = 0;  // elements compared
  double worst = 0;     // largest error, in the family's tolerance units
  double bound = 0;
  std::string where;  // "out[3, 1, 7]" of the worst element
  double expected = 0, got = 0, error = 0, allowed = 0;

  // Folds another output's comparison into this one.
  void merge(const Comparison& other);
  std::string describe() const;  // "out[3, 1, 7]: expected …, got …, error … > allowed … (… units)"
};

// unit(index) gives the size of one tolerance unit at a logical index (rank ≤ 4, row-major).
using UnitFn = std::function<double(const int64_t* index)>;

Comparison compare(const std::string& name, const Tensor& expected, const Tensor& got, double bound,
                   const UnitFn& unit);

}  // namespace posenc::harness
