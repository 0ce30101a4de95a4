// Mirror: the memory of a call's tensors, copied into pages shared with child processes. A kernel
// running in a child (run_isolated) works on the mirror; afterwards the parent copies back exactly
// the bytes the kernel changed. Each mirrored region sits in poisoned slack between inaccessible
// guard pages, so a write just outside every tensor shows up in the slack and a wild one faults.
// A region whose original memory ends (or starts) at an inaccessible page, as a read-guarded
// arena's do, is mirrored flush against its guard page on that side: a read just past it faults
// in the child as it would have here, and fault_at() names the tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/tensor.h"

namespace posenc::plugin {

// Memory shared with every child forked after it was made: one large reservation, of which only
// the pages written take memory. A persistent child (Worker) sees the mirrors of calls made long
// after it started at the same addresses. Allocations are whole pages and last until reset().
class SharedMemory {
 public:
  explicit SharedMemory(size_t reserve = size_t{16} << 30);  // less if the system refuses
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory();

  uint8_t* allocate(size_t bytes);  // page-aligned, whole pages; null when full
  void reset() { used_ = 0; }
  uint8_t* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0, used_ = 0;
};

class Mirror {
 public:
  Mirror() = default;
  // Regions in `memory` rather than in mappings of their own. Their guard pages are then not
  // protected here: the child that runs the kernel protects everything but accessible().
  explicit Mirror(SharedMemory* memory) : memory_(memory) {}
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;
  ~Mirror();

  // Registers `view` under `name`; map() repoints its data into the mirror. Views whose memory
  // overlaps share one region, so in-place and packed views keep their aliasing.
  void add(std::string name, Tensor& view, bool output = false);

  // Allocates the regions and copies the views' bytes in. A view whose extent can't be computed,
  // or whose memory can't be read (bad input in a bad-input check), keeps its own data pointer and
  // is listed by unmirrored().
  void map();

  // Copies back every byte changed in the mirror since map(). Returns the first write outside
  // every view's extent ("byte +3 after the memory of q_out"), which is never copied back.
  std::optional<std::string> copy_back();

  // "name (reason)" of each view left pointing at its own memory.
  const std::vector<std::string>& unmirrored() const { return unmirrored_; }

  // The pages a kernel may touch, slack included: [first, first + size) per region.
  std::vector<std::pair<uint8_t*, size_t>> accessible() const;

  // What a fault at `address` in the child touched, when that is a guard page of this mirror:
  // "read outside input x (byte +0 after its end)", or for a write (`write`) the words of
  // copy_back ("wrote outside its tensors: byte +0 after the end of the memory of out").
  std::optional<std::string> fault_at(uintptr_t address, bool write) const;

  static constexpr uint8_t kPoison = 0x5A;
  static constexpr size_t kSlack = 64;  // least poisoned bytes on each side of a region

 private:
  struct View {
    std::string name;
    Tensor* tensor;
    bool output = false;
    uintptr_t lo = 0, hi = 0;  // byte extent [lo, hi) in the original memory
  };
  enum class Flush : uint8_t { none, end, start };  // against which guard page the bytes sit
  struct Region {
    uintptr_t lo = 0, hi = 0;
    Flush flush = Flush::none;
    std::vector<size_t> views;   // indices into views_
    uint8_t* mapping = nullptr;  // guard page, slack, bytes, slack, guard page
    size_t mapping_size = 0;
    uint8_t* bytes = nullptr;           // the mirror of lo
    size_t accessible = 0;              // slack + bytes + slack, starting one page into the mapping
    std::unique_ptr<uint8_t[]> before;  // the bytes as copied in
  };
  SharedMemory* memory_ = nullptr;
  std::vector<View> views_;
  std::vector<Region> regions_;
  std::vector<std::string> unmirrored_;
};

}  // namespace posenc::plugin
