#include "properties/harness.h"

namespace posenc::harness {

void Values::fill(const Tensor& t, double lo, double hi) {
  harness::fill(t, [&] { return uniform(lo, hi); });
}

void Values::fill_index(const Tensor& t, int64_t lo, int64_t hi) {
  for_each_offset(t, [&](int64_t off) {
    const int64_t v = integer(lo, hi);
    if (t.dtype == DType::i64)
      t.as<int64_t>()[off] = v;
    else
      t.as<int32_t>()[off] = static_cast<int32_t>(v);
  });
}

}  // namespace posenc::harness
