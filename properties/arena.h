// Arena: owns every buffer of one generated problem. Each allocation sits between guard regions,
// and padding inside padded or permuted views is filled too, so after a kernel runs,
// `stray_write` finds any byte changed outside the declared outputs. A read-guarded arena also
// places each allocation flush against an inaccessible page, so that `stray_read` finds a read
// just past its end (or before its start).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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

// Where a read-guarded allocation's bytes sit against its inaccessible pages.
enum class ReadGuard : uint8_t {
  none,   // on the heap between guard bytes: writes outside show, reads do not
  end,    // its last byte flush against an inaccessible page: a read past the end faults
  start,  // its first byte flush against one: a read before the start faults
};
const char* read_guard_name(ReadGuard guard);

class Arena {
 public:
  Arena() = default;
  // With `end` or `start`, every allocation is mapped between two inaccessible pages, flush
  // against that side's page. The first access to one of those pages is recorded and the page
  // opened (filled with poison), so the kernel runs on, in any thread, and its call returns.
  explicit Arena(ReadGuard guard) : guard_(guard) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  // A fresh guarded tensor; every byte starts as the poison pattern.
  Tensor alloc(DType dtype, std::vector<int64_t> shape, Layout layout = Layout::contiguous);

  // Remembers every byte of every allocation; call after filling inputs, before the kernel.
  void snapshot();
  // The first byte that changed since snapshot() outside `outputs`, described by its buffer, its
  // byte offset and whether it lies in a guard; nullopt when none did.
  std::optional<std::string> stray_write(const std::vector<Tensor>& outputs) const;
  // The first access to an inaccessible page of a read-guarded arena that wrote nothing there,
  // named by the view of `views` whose allocation it guards: "read outside input k (byte +0
  // after its end)"; nullopt when there was none. Writes there are stray_write's.
  struct NamedView {
    std::string name;
    Tensor view;
    bool output = false;
  };
  std::optional<std::string> stray_read(const std::vector<NamedView>& views) const;
  ReadGuard guard() const { return guard_; }

 private:
  struct Block {
    uint8_t* bytes = nullptr;  // guard + payload + guard
    size_t size = 0;
    size_t payload = 0;           // offset of the payload
    size_t payload_size = 0;      // bytes
    size_t page = 0;              // read-guarded: the size of each inaccessible page, else 0
    size_t slots[2] = {0, 0};     // read-guarded: the fault slots of the pages before and after
    std::vector<uint8_t> before;  // snapshot
    std::string what;             // the view it was allocated for
  };
  // Where an inaccessible page of `b` was first touched; 0 when never (or not read-guarded).
  uintptr_t touched(const Block& b, bool after) const;
  // The byte ranges [lo, hi) of `b` that can be read now: not its guard pages still closed.
  std::vector<std::pair<size_t, size_t>> readable_ranges(const Block& b) const;

  ReadGuard guard_ = ReadGuard::none;
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
