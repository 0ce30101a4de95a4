#include "properties/arena.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace posenc::harness {

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::padded:
      return "padded";
    case Layout::permuted:
      return "permuted";
  }
  return "?";
}

Tensor Arena::alloc(DType dtype, std::vector<int64_t> shape, Layout layout) {
  Tensor t;
  t.dtype = dtype;
  t.rank = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape.begin());
  // Memory order of the dims: row-major, or with the innermost two swapped.
  std::vector<int> order(t.rank);
  for (int d = 0; d < t.rank; ++d) order[d] = d;
  if (layout == Layout::permuted && t.rank >= 2) std::swap(order[t.rank - 1], order[t.rank - 2]);
  // A vector in a padded layout is a column of a wider tensor: stride 2, as positions taken from
  // a [tokens, 2] buffer.
  int64_t stride = t.rank == 1 && layout != Layout::contiguous ? 2 : 1, extent = 1;
  for (int k = t.rank - 1; k >= 0; --k) {
    const int d = order[k];
    t.strides[d] = stride;
    const int64_t pad = layout == Layout::contiguous ? 0 : 1 + d % 3;
    stride *= t.shape[d] + pad;
    extent = stride;
  }
  const size_t elem = dtype_size(dtype);
  const size_t payload = static_cast<size_t>(std::max<int64_t>(extent, 1)) * elem;
  Block b;
  b.size = kGuardBytes + payload + kGuardBytes;
  b.payload = kGuardBytes;
  b.bytes.reset(new uint8_t[b.size]);
  std::memset(b.bytes.get(), kPoison, b.size);
  t.data = b.bytes.get() + b.payload;
  b.what = t.describe();
  blocks_.push_back(std::move(b));
  return t;
}

void Arena::snapshot() {
  for (Block& b : blocks_) b.before.assign(b.bytes.get(), b.bytes.get() + b.size);
}

std::optional<std::string> Arena::stray_write(const std::vector<Tensor>& outputs) const {
  // Mark, per block, the bytes the outputs may write; then any other changed byte is stray.
  std::vector<std::vector<bool>> allowed(blocks_.size());
  for (size_t i = 0; i < blocks_.size(); ++i) allowed[i].assign(blocks_[i].size, false);
  for (const Tensor& t : outputs) {
    const auto* base = static_cast<const uint8_t*>(t.data);
    size_t i = 0;
    while (i < blocks_.size() &&
           !(base >= blocks_[i].bytes.get() && base < blocks_[i].bytes.get() + blocks_[i].size))
      ++i;
    if (i == blocks_.size()) continue;  // not ours: nothing of ours may change through it
    const size_t elem = dtype_size(t.dtype);
    const auto* block = blocks_[i].bytes.get();
    for_each_offset(t, [&](int64_t off) {
      const auto* p = base + off * static_cast<int64_t>(elem);
      for (size_t b = 0; b < elem; ++b) {
        const auto k = static_cast<size_t>(p + b - block);
        if (k < allowed[i].size()) allowed[i][k] = true;
      }
    });
  }
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    for (size_t k = 0; k < b.size; ++k) {
      if (b.bytes[k] == b.before[k] || allowed[i][k]) continue;
      const auto offset = static_cast<long long>(k) - static_cast<long long>(b.payload);
      const auto payload = static_cast<long long>(b.size - 2 * kGuardBytes);
      const char* where = offset < 0          ? " (in the guard before it)"
                          : offset >= payload ? " (in the guard after it)"
                                              : " (padding or an input)";
      return "buffer #" + std::to_string(i) + " " + b.what + ", byte " + std::to_string(offset) +
             where;
    }
  }
  return std::nullopt;
}

}  // namespace posenc::harness
