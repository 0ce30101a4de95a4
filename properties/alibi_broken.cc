// alibi's broken kernels for the self-test (selftest.h), beside its properties
// (properties/alibi.cc). Each computes in fp64 and rounds once, like the reference, so that the bug
// is the only thing wrong with it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "posenc/error.h"
#include "properties/harness.h"
#include "properties/selftest.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

enum class AlibiBug {
  slopes_use_n,       // 2^(−m(h+1)/n) for every head: right only when n is a power of two
  signed_distance,    // −slope·(q − k) without the absolute value
  masks_diagonal,     // the causal mask hides k ≥ q, the diagonal too
  causal_unmasked,    // the causal form without its −∞ for later keys
  token_indices,      // distances between token indices, not positions
  distance_in_dtype,  // |q − k| converted to the bias's dtype before the product
};

void alibi_with(AlibiBug bug, const AlibiCall& call) {
  call.validate();
  const int64_t tq = call.q_positions.shape[0], tk = call.k_positions.shape[0];
  const auto c = static_cast<double>(std::bit_floor(static_cast<uint64_t>(call.n_heads)));
  for (int64_t h = 0; h < call.n_heads; ++h) {
    const double hh = static_cast<double>(h), m = call.max_bias;
    const double slope =
        bug == AlibiBug::slopes_use_n
            ? std::exp2(-m * (hh + 1) / static_cast<double>(call.n_heads))
            : std::exp2(hh < c ? -m * (hh + 1) / c : -(m / 2) * (2 * (hh - c) + 1) / c);
    if (call.slopes) store(*call.slopes, call.slopes->offset(h), slope);
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) {
        int64_t qp = load_index(call.q_positions, call.q_positions.offset(i));
        int64_t kp = load_index(call.k_positions, call.k_positions.offset(j));
        if (bug == AlibiBug::token_indices) qp = i + tk - tq, kp = j;
        const bool hidden = bug == AlibiBug::masks_diagonal ? kp >= qp : kp > qp;
        double distance = static_cast<double>(std::abs(qp - kp));
        // Exact in f32 (≤ 2²⁴); bf16 keeps 8 bits of it, f16 11 and nothing past 65504.
        if (bug == AlibiBug::distance_in_dtype) distance = rounded_to(call.bias.dtype, distance);
        double value = slope * -distance;
        if (bug == AlibiBug::signed_distance && !call.causal)
          value = slope * static_cast<double>(kp - qp);
        if (call.causal && hidden && bug != AlibiBug::causal_unmasked) value = -INFINITY;
        store(call.bias, call.bias.offset(h, i, j), value);
      }
  }
}

}  // namespace

template <>
std::vector<Broken<AlibiCall>> broken_implementations<AlibiCall>() {
  using B = AlibiBug;
  auto make = [](const char* name, B bug) {
    return broken_kernel<AlibiCall>(name, bug, alibi_with, 1);
  };
  std::vector<Broken<AlibiCall>> list = {
      {make("slopes_use_n", B::slopes_use_n),
       "slopes 2^(−8(h+1)/n): wrong when the head count is not a power of two",
       "alibi.geometric_slopes"},
      {make("signed_distance", B::signed_distance), "−slope·(q − k) without |·|",
       "alibi.distance_only"},
      {make("masks_diagonal", B::masks_diagonal), "the causal mask hides the diagonal too",
       "alibi.zero_diagonal"},
      {make("causal_unmasked", B::causal_unmasked), "the causal form without its −∞",
       "alibi.press_softmax"},
      {make("token_indices", B::token_indices), "distances between token indices, not positions",
       "alibi.differential"},
      {make("distance_in_dtype", B::distance_in_dtype),
       "converts |q_pos − k_pos| to the bias's dtype before the product: wrong in bf16 and f16 "
       "only",
       "alibi.differential"},
  };
  add_generic(list, "alibi");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<AlibiCall>() {
  // Each element stands alone: no reduction whose order a thread count could change.
  return {{"alibi.threads",
           "sinusoidal/broken:chunked_f32_angles, attention/broken:split_keys_by_thread"}};
}

}  // namespace posenc::harness
