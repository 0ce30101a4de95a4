#include "properties/harness.h"

namespace posenc::harness {

void Values::fill(const Tensor& t, double lo, double hi) {
  harness::fill(t, [&] { return uniform(lo, hi); });
}

void store_index(const Tensor& t, int64_t offset, int64_t value) {
  if (t.dtype == DType::i64)
    t.as<int64_t>()[offset] = value;
  else
    t.as<int32_t>()[offset] = static_cast<int32_t>(value);
}

void Values::fill_index(const Tensor& t, int64_t lo, int64_t hi) {
  for_each_offset(t, [&](int64_t off) { store_index(t, off, integer(lo, hi)); });
}

const char* positions_name(PositionPattern kind) {
  switch (kind) {
    case PositionPattern::cache:
      return "cache";
    case PositionPattern::shifted:
      return "shifted";
    case PositionPattern::duplicates:
      return "duplicates";
    case PositionPattern::wide:
      return "wide";
  }
  return "?";
}

void fill_positions(const Tensor& q_positions, const Tensor& k_positions, PositionPattern kind,
                    Values& values) {
  const int64_t tq = q_positions.shape[0], tk = k_positions.shape[0];
  if (kind == PositionPattern::duplicates || kind == PositionPattern::wide) {
    const int64_t hi = kind == PositionPattern::duplicates ? 5 : kMaxPosition;
    values.fill_index(q_positions, 0, hi);
    values.fill_index(k_positions, 0, hi);
    return;
  }
  const int64_t first = kind == PositionPattern::shifted ? kMaxPosition - (tk - 1) : 0;
  for (int64_t j = 0; j < tk; ++j) store_index(k_positions, k_positions.offset(j), first + j);
  for (int64_t i = 0; i < tq; ++i)
    store_index(q_positions, q_positions.offset(i), first + tk - tq + i);
}

}  // namespace posenc::harness
