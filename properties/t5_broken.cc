// t5's broken kernels for the self-test (selftest.h), beside its properties (properties/t5.cc).
// Each computes in fp64 and rounds once, like the reference, so that the bug is the only thing
// wrong with it.
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

enum class T5Bug {
  cap_at_n,           // min(n, …) instead of min(n − 1, …): one bucket past the end
  log_polynomial,     // ln x ≈ (x − 1) − (x − 1)²/2 with no range reduction (clamped at 0)
  zero_goes_up,       // bidirectional: rp ≥ 0 (not > 0) takes the upper half
  reversed_relative,  // rp = q − k instead of k − q
  wide_copies,        // copies each element as 4 bytes (sizeof(float)) whatever the dtype
};

int64_t t5_bucket_with(T5Bug bug, int64_t rp, const T5Call& call) {
  if (bug == T5Bug::reversed_relative) rp = -rp;
  int64_t n = call.n_buckets, bucket = 0, r = 0;
  if (call.bidirectional) {
    n /= 2;
    if (bug == T5Bug::zero_goes_up ? rp >= 0 : rp > 0) bucket = n;
    r = std::abs(rp);
  } else {
    r = std::max<int64_t>(-rp, 0);
  }
  const int64_t exact = n / 2;
  if (r < exact) return bucket + r;
  const float ratio = static_cast<float>(r) / static_cast<float>(exact);
  const float y = ratio - 1;
  const float log_ratio = bug == T5Bug::log_polynomial
                              ? y - y * y / 2
                              : static_cast<float>(std::log(static_cast<double>(ratio)));
  const auto log_span = static_cast<float>(
      std::log(static_cast<double>(call.max_distance) / static_cast<double>(exact)));
  const float steps = log_ratio / log_span * static_cast<float>(n - exact);
  const int64_t last = bug == T5Bug::cap_at_n ? n - exact : n - exact - 1;
  if (!(static_cast<double>(steps) < static_cast<double>(last))) return bucket + exact + last;
  if (!(steps > 0)) return bucket + exact;
  return bucket + exact + static_cast<int64_t>(steps);
}

void t5_with(T5Bug bug, const T5Call& call) {
  call.validate();
  const int64_t heads = call.table.shape[1];
  for (int64_t i = 0; i < call.q_positions.shape[0]; ++i) {
    const int64_t qp = load_index(call.q_positions, call.q_positions.offset(i));
    for (int64_t j = 0; j < call.k_positions.shape[0]; ++j) {
      const int64_t kp = load_index(call.k_positions, call.k_positions.offset(j));
      const int64_t b = t5_bucket_with(bug, kp - qp, call);
      for (int64_t h = 0; h < heads; ++h) {
        if (bug == T5Bug::wide_copies) {  // right for f32; 2 bytes too many for bf16 and f16
          const size_t size = dtype_size(call.bias.dtype);
          std::memcpy(call.bias.as<char>() + call.bias.offset(h, i, j) * size,
                      call.table.as<const char>() + call.table.offset(b, h) * size, 4);
          continue;
        }
        store(call.bias, call.bias.offset(h, i, j), load(call.table, call.table.offset(b, h)));
      }
    }
  }
}

}  // namespace

template <>
std::vector<Broken<T5Call>> broken_implementations<T5Call>() {
  using B = T5Bug;
  auto make = [](const char* name, B bug) { return broken_kernel<T5Call>(name, bug, t5_with, 0); };
  std::vector<Broken<T5Call>> list = {
      {make("cap_at_n", B::cap_at_n), "caps the bucket at n instead of n − 1",
       "t5.bucket_in_range"},
      {make("log_polynomial", B::log_polynomial),
       "ln approximated by a polynomial without range reduction", "t5.monotone"},
      {make("zero_goes_up", B::zero_goes_up), "bidirectional: rp = 0 takes the upper half",
       "t5.symmetric_split"},
      {make("reversed_relative", B::reversed_relative), "rp = q − k instead of k − q",
       "t5.differential"},
      {make("wide_copies", B::wide_copies),
       "copies elements as 4-byte floats: writes past each bf16 or f16 element, f32 is right",
       "t5.guard_bytes"},
  };
  add_generic(list, "t5");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<T5Call>() {
  // A lookup: no reduction whose order a thread count could change.
  return {{"t5.threads",
           "sinusoidal/broken:chunked_f32_angles, attention/broken:split_keys_by_thread"}};
}

}  // namespace posenc::harness
