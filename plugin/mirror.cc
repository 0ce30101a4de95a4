#include "plugin/mirror.h"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace posenc::plugin {

namespace {

constexpr uintptr_t kAlignment = 64;  // the mirror keeps each address's offset modulo this
constexpr uintptr_t kMaxRegion = uintptr_t{1} << 32;
constexpr size_t kBlock = 4096;  // copy_back compares block by block

// The byte extent [lo, hi) of a view, or why there is none to mirror.
struct Extent {
  uintptr_t lo = 0, hi = 0;
  std::string problem;
};

Extent extent(const Tensor& t) {
  if (t.rank < 0 || t.rank > kMaxRank) return {.problem = "rank " + std::to_string(t.rank)};
  const int64_t size = static_cast<int64_t>(dtype_size(t.dtype));
  if (size == 0) return {.problem = "unknown dtype"};
  int64_t lo = 0, hi = 0;  // element offsets of the lowest and highest element
  bool empty = false;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 0) return {.problem = "negative shape"};
    if (t.shape[d] == 0) empty = true;
    int64_t reach;
    if (__builtin_mul_overflow(t.shape[d] == 0 ? 0 : t.shape[d] - 1, t.strides[d], &reach) ||
        __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi))
      return {.problem = "extent overflows int64"};
  }
  const auto base = reinterpret_cast<uintptr_t>(t.data);
  if (empty) return {.lo = base, .hi = base};
  if (t.data == nullptr) return {.problem = "null data"};
  int64_t lo_bytes, end_bytes, span;
  if (__builtin_mul_overflow(lo, size, &lo_bytes) || __builtin_add_overflow(hi, 1, &hi) ||
      __builtin_mul_overflow(hi, size, &end_bytes) ||
      __builtin_sub_overflow(end_bytes, lo_bytes, &span) ||
      static_cast<uint64_t>(span) > kMaxRegion)
    return {.problem = "extent over 4 GiB"};
  if (lo_bytes < 0 && static_cast<uintptr_t>(-lo_bytes) > base)
    return {.problem = "extent below address 0"};
  return {.lo = base + static_cast<uintptr_t>(lo_bytes),
          .hi = base + static_cast<uintptr_t>(end_bytes)};
}

// Copies with the kernel's help, so an unreadable or read-only address is an error, not a fault.
bool copy_memory(void* to, const void* from, size_t size, bool to_is_remote) {
  if (size == 0) return true;
  iovec local{to_is_remote ? const_cast<void*>(from) : to, size};
  iovec remote{to_is_remote ? to : const_cast<void*>(from), size};
  const ssize_t n = to_is_remote ? process_vm_writev(getpid(), &local, 1, &remote, 1, 0)
                                 : process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  return n == static_cast<ssize_t>(size);
}

// Whether this process may read the byte at `address` (a read-guarded arena's pages may not).
bool readable(uintptr_t address) {
  uint8_t byte;
  return address != 0 && copy_memory(&byte, reinterpret_cast<const void*>(address), 1, false);
}

std::string names(const std::vector<std::string>& all) {
  std::string text;
  for (const auto& name : all) {
    if (text.find(name) != std::string::npos) continue;
    text += (text.empty() ? "" : " and ") + name;
  }
  return text;
}

}  // namespace

SharedMemory::SharedMemory(size_t reserve) {
  // Untouched pages cost nothing; the size only bounds one call's tensors.
  for (size_t size = reserve; size >= (size_t{64} << 20); size /= 2) {
    void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m != MAP_FAILED) {
      base_ = static_cast<uint8_t*>(m);
      size_ = size;
      return;
    }
  }
}

SharedMemory::~SharedMemory() {
  if (base_) munmap(base_, size_);
}

uint8_t* SharedMemory::allocate(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  if (base_ == nullptr || bytes > size_ - used_) return nullptr;
  uint8_t* at = base_ + used_;
  used_ += bytes;
  return at;
}

Mirror::~Mirror() {
  if (memory_) return;  // its memory's to reuse
  for (Region& r : regions_)
    if (r.mapping) munmap(r.mapping, r.mapping_size);
}

std::vector<std::pair<uint8_t*, size_t>> Mirror::accessible() const {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<std::pair<uint8_t*, size_t>> pages;
  for (const Region& r : regions_)
    if (r.mapping && !r.views.empty()) pages.emplace_back(r.mapping + page, r.accessible);
  return pages;
}

void Mirror::add(std::string name, Tensor& view, bool output) {
  views_.push_back({std::move(name), &view, output});
}

void Mirror::map() {
  std::vector<size_t> order;
  for (size_t i = 0; i < views_.size(); ++i) {
    View& v = views_[i];
    const Extent e = extent(*v.tensor);
    if (!e.problem.empty()) {
      unmirrored_.push_back(v.name + " (" + e.problem + ")");
      continue;
    }
    if (v.tensor->data == nullptr) continue;  // empty and nowhere: nothing to mirror
    v.lo = e.lo;
    v.hi = e.hi;
    order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(views_[a].lo, views_[a].hi) < std::pair(views_[b].lo, views_[b].hi);
  });
  for (size_t i : order) {
    const View& v = views_[i];
    if (!regions_.empty() && v.lo < regions_.back().hi) {
      regions_.back().hi = std::max(regions_.back().hi, v.hi);
    } else {
      regions_.push_back({.lo = v.lo, .hi = v.hi});
    }
    regions_.back().views.push_back(i);
  }

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (Region& r : regions_) {
    const size_t size = r.hi - r.lo;
    if (size > 0 && !readable(r.hi))
      r.flush = Flush::end;
    else if (size > 0 && !readable(r.lo - 1))
      r.flush = Flush::start;
    // Flush against a page, the bytes keep only their element alignment; else their offset mod
    // kAlignment, with slack on both sides.
    r.accessible = (kSlack + r.lo % kAlignment + size + kSlack + page - 1) / page * page;
    if (r.flush != Flush::none) r.accessible = (size + kSlack + page - 1) / page * page;
    const size_t head = r.flush == Flush::end     ? r.accessible - size
                        : r.flush == Flush::start ? 0
                                                  : kSlack + r.lo % kAlignment;
    r.mapping_size = r.accessible + 2 * page;
    void* m = memory_ ? memory_->allocate(r.mapping_size)
                      : mmap(nullptr, r.mapping_size, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    std::string problem;
    if (m == MAP_FAILED || m == nullptr) {
      problem = "no memory for its mirror";
    } else {
      r.mapping = static_cast<uint8_t*>(m);
      if (!memory_) {
        mprotect(r.mapping, page, PROT_NONE);
        mprotect(r.mapping + page + r.accessible, page, PROT_NONE);
      }
      r.bytes = r.mapping + page + head;
      std::memset(r.mapping + page, kPoison, head);
      std::memset(r.bytes + size, kPoison, r.accessible - head - size);
      r.before.reset(new uint8_t[size]);
      if (!copy_memory(r.before.get(), reinterpret_cast<const void*>(r.lo), size, false))
        problem = "memory not readable";
    }
    if (!problem.empty()) {
      for (size_t i : r.views) unmirrored_.push_back(views_[i].name + " (" + problem + ")");
      r.views.clear();
      continue;
    }
    std::memcpy(r.bytes, r.before.get(), size);
    for (size_t i : r.views) {
      Tensor& t = *views_[i].tensor;
      t.data = r.bytes + (reinterpret_cast<uintptr_t>(t.data) - r.lo);
    }
  }
}

std::optional<std::string> Mirror::copy_back() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::optional<std::string> stray;
  for (Region& r : regions_) {
    if (r.views.empty()) continue;
    std::vector<std::string> region_names;
    for (size_t i : r.views) region_names.push_back(views_[i].name);
    const size_t size = r.hi - r.lo;
    // Runs of changed blocks, each written back from its first to its last changed byte (bytes
    // in between that did not change are written back as they were).
    const uint8_t* before = r.before.get();
    auto changed = [&](size_t k) {
      return std::memcmp(r.bytes + k, before + k, std::min(kBlock, size - k)) != 0;
    };
    for (size_t k = 0; k < size;) {
      if (!changed(k)) {
        k += kBlock;
        continue;
      }
      size_t end = k;
      while (end < size && changed(end)) end += kBlock;
      end = std::min(end, size);
      size_t first = k, last = end - 1;
      while (r.bytes[first] == before[first]) ++first;
      while (r.bytes[last] == before[last]) --last;
      if (!copy_memory(reinterpret_cast<void*>(r.lo + first), r.bytes + first, last + 1 - first,
                       true) &&
          !stray)
        stray = "byte " + std::to_string(first) + " of the memory of " + names(region_names) +
                ", which is not writable";
      k = end;
    }
    if (stray) continue;
    const uint8_t* first = r.mapping + page;
    const uint8_t* last = first + r.accessible;
    for (const uint8_t* p = first; p < last && !stray; ++p) {
      if (*p == kPoison) continue;
      if (p < r.bytes) {
        stray =
            "byte -" + std::to_string(r.bytes - p) + " before the memory of " + names(region_names);
      } else if (p >= r.bytes + size) {
        stray = "byte +" + std::to_string(p - (r.bytes + size)) +
                " after the end of the memory of " + names(region_names);
      } else {
        p = r.bytes + size - 1;  // inside the views: copied back above
      }
    }
  }
  return stray;
}

std::optional<std::string> Mirror::fault_at(uintptr_t address, bool write) const {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (const Region& r : regions_) {
    if (r.mapping == nullptr || r.views.empty()) continue;
    const auto first = reinterpret_cast<uintptr_t>(r.mapping);
    const uintptr_t last = first + page + r.accessible;  // the guard page after
    const bool before = address >= first && address < first + page;
    const bool after = address >= last && address < last + page;
    if (!before && !after) continue;
    const auto bytes = reinterpret_cast<uintptr_t>(r.bytes);
    const size_t size = r.hi - r.lo;
    std::vector<std::string> inputs, all;
    for (size_t i : r.views) {
      all.push_back(views_[i].name);
      if (!views_[i].output) inputs.push_back(views_[i].name);
    }
    if (write)
      return "wrote outside its tensors: " +
             (after ? "byte +" + std::to_string(address - (bytes + size)) +
                          " after the end of the memory of "
                    : "byte -" + std::to_string(bytes - address) + " before the memory of ") +
             names(all);
    return "read outside " + std::string(inputs.empty() ? "output " : "input ") +
           names(inputs.empty() ? all : inputs) + " (" +
           (after ? "byte +" + std::to_string(address - (bytes + size)) + " after its end"
                  : "byte -" + std::to_string(bytes - address) + " before its start") +
           ")";
  }
  return std::nullopt;
}

}  // namespace posenc::plugin
