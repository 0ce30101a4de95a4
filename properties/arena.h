// Arena: owns every buffer of one generated problem. Each allocation sits between guard regions,
// and padding inside padded or permuted views is filled too, so after a kernel runs,
// `stray_write` finds any byte changed outside the declared outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "posenc/tensor.h"

namespace posenc::harness {

// How a logical tensor is laid out in memory.
enum class Layout : uint8_t {
  contiguous,  // row-major, no gaps
  padded,      // row-major with every dimension's stride padded (rows of a larger tensor); a
               // vector gets stride 2
  permuted,    // the innermost two dims swapped in memory (a transposed view), padded
};
const char* layout_name(Layout layout);

class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // A fresh guarded tensor; every byte starts as the poison pattern.
  Tensor alloc(DType dtype, std::vector<int64_t> shape, Layout layout = Layout::contiguous);

  // Remembers every byte of every allocation; call after filling inputs, before the kernel.
  void snapshot();
  // The first byte that changed since snapshot() outside `outputs`, described by its buffer, its
  // byte offset and whether it lies in a guard; nullopt when none did.
  std::optional<std::string> stray_write(const std::vector<Tensor>& outputs) const;

 private:
  struct Block {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size = 0;              // guard + payload + guard
    size_t payload = 0;           // offset of the payload
    std::vector<uint8_t> before;  // snapshot
    std::string what;             // the view it was allocated for
  };
  std::vector<Block> blocks_;
};

inline constexpr size_t kGuardBytes = 64;
inline constexpr uint8_t kPoison = 0xA5;

// Fills every element of a float view (any layout) from `next`, in logical row-major order.
template <class Next>
void fill(const Tensor& t, Next&& next);

// Logical row-major iteration over a view's element offsets.
template <class F>
void for_each_offset(const Tensor& t, F&& f) {
  if (t.numel() == 0) return;
  std::array<int64_t, kMaxRank> index{};
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < t.rank; ++d) off += index[d] * t.strides[d];
    f(off);
    int d = t.rank - 1;
    while (d >= 0 && ++index[d] == t.shape[d]) index[d--] = 0;
    if (d < 0) return;
  }
}

template <class Next>
void fill(const Tensor& t, Next&& next) {
  for_each_offset(t, [&](int64_t off) { store(t, off, next()); });
}

}  // namespace posenc::harness
