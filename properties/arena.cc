#include "properties/arena.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>

namespace posenc::harness {

namespace {

// The inaccessible pages of live read-guarded arenas, one slot each, read by the fault handler
// (so: a fixed table of atomics, no locks). A slot's `fault` is the first address touched.
struct FaultSlot {
  std::atomic<uintptr_t> page{0};
  std::atomic<uintptr_t> fault{0};
};
constexpr size_t kFaultSlots = 4096;  // 2048 live read-guarded allocations
FaultSlot fault_slots[kFaultSlots];
std::mutex slots_mutex;  // taking and freeing slots; the handler only reads
size_t page_size = 0;
struct sigaction previous_segv;

// A fault on a guard page is recorded and the page opened, then the access runs again and
// succeeds. Any other fault goes to the handler that was there before (ASan's, or the default).
void on_segv(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  const uintptr_t page = address & ~(page_size - 1);
  for (FaultSlot& slot : fault_slots) {
    if (page == 0 || slot.page.load(std::memory_order_acquire) != page) continue;
    uintptr_t none = 0;
    slot.fault.compare_exchange_strong(none, address);
    mprotect(reinterpret_cast<void*>(page), page_size, PROT_READ | PROT_WRITE);
    return;
  }
  if ((previous_segv.sa_flags & SA_SIGINFO) && previous_segv.sa_sigaction) {
    previous_segv.sa_sigaction(signal, info, context);
    return;
  }
  // SIG_DFL or a plain handler: reinstate it; the access faults again and meets it.
  sigaction(SIGSEGV, &previous_segv, nullptr);
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    page_size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
  });
}

size_t take_slot(uintptr_t page) {
  std::lock_guard lock(slots_mutex);
  for (size_t i = 0; i < kFaultSlots; ++i) {
    if (fault_slots[i].page.load(std::memory_order_relaxed) != 0) continue;
    fault_slots[i].fault.store(0, std::memory_order_relaxed);
    fault_slots[i].page.store(page, std::memory_order_release);
    return i;
  }
  throw std::runtime_error("more than 2048 read-guarded allocations live at once");
}

void free_slot(size_t i) {
  std::lock_guard lock(slots_mutex);
  fault_slots[i].page.store(0, std::memory_order_release);
}

// The byte extent of a view laid out from offset 0: one past its farthest element.
size_t extent_bytes(const Tensor& t) {
  int64_t last = 0;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] == 0) return 0;
    last += (t.shape[d] - 1) * t.strides[d];
  }
  return static_cast<size_t>(last + 1) * dtype_size(t.dtype);
}

}  // namespace

const char* read_guard_name(ReadGuard guard) {
  switch (guard) {
    case ReadGuard::none:
      return "none";
    case ReadGuard::end:
      return "end";
    case ReadGuard::start:
      return "start";
  }
  return "?";
}

Arena::~Arena() {
  for (Block& b : blocks_) {
    if (b.page == 0) {
      delete[] b.bytes;
      continue;
    }
    free_slot(b.slots[0]);
    free_slot(b.slots[1]);
    munmap(b.bytes, b.size);
  }
}

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
  Block b;
  if (guard_ == ReadGuard::none) {
    b.payload_size = static_cast<size_t>(std::max<int64_t>(extent, 1)) * elem;
    b.size = kGuardBytes + b.payload_size + kGuardBytes;
    b.payload = kGuardBytes;
    b.bytes = new uint8_t[b.size];
    std::memset(b.bytes, kPoison, b.size);
  } else {
    // Page, guard bytes + payload rounded up to pages, page; the payload is its view's exact
    // extent (no trailing padding), so that the view's last (or first) byte touches the page.
    install_handler();
    b.payload_size = std::max(extent_bytes(t), elem);
    b.page = page_size;
    const size_t room = (kGuardBytes + b.payload_size + b.page - 1) / b.page * b.page;
    b.size = room + 2 * b.page;
    void* m = mmap(nullptr, b.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    b.bytes = static_cast<uint8_t*>(m);
    std::memset(b.bytes, kPoison, b.size);
    b.payload = guard_ == ReadGuard::end ? b.page + room - b.payload_size : b.page;
    const uintptr_t pages[2] = {reinterpret_cast<uintptr_t>(b.bytes),
                                reinterpret_cast<uintptr_t>(b.bytes + b.page + room)};
    for (int side = 0; side < 2; ++side) {
      mprotect(reinterpret_cast<void*>(pages[side]), b.page, PROT_NONE);
      b.slots[side] = take_slot(pages[side]);
    }
  }
  t.data = b.bytes + b.payload;
  b.what = t.describe();
  blocks_.push_back(std::move(b));
  return t;
}

uintptr_t Arena::touched(const Block& b, bool after) const {
  if (b.page == 0) return 0;
  return fault_slots[b.slots[after ? 1 : 0]].fault.load(std::memory_order_acquire);
}

std::vector<std::pair<size_t, size_t>> Arena::readable_ranges(const Block& b) const {
  if (b.page == 0) return {{0, b.size}};
  std::vector<std::pair<size_t, size_t>> ranges;
  if (touched(b, false)) ranges.emplace_back(0, b.page);
  ranges.emplace_back(b.page, b.size - b.page);
  if (touched(b, true)) ranges.emplace_back(b.size - b.page, b.size);
  return ranges;
}

void Arena::snapshot() {
  // A closed guard page holds the poison it was filled with; an opened one, what it holds now.
  for (Block& b : blocks_) {
    b.before.assign(b.size, kPoison);
    for (const auto& [lo, hi] : readable_ranges(b))
      std::memcpy(b.before.data() + lo, b.bytes + lo, hi - lo);
  }
}

std::optional<std::string> Arena::stray_write(const std::vector<Tensor>& outputs) const {
  // Mark, per block, the bytes the outputs may write; then any other changed byte is stray.
  std::vector<std::vector<bool>> allowed(blocks_.size());
  for (size_t i = 0; i < blocks_.size(); ++i) allowed[i].assign(blocks_[i].size, false);
  for (const Tensor& t : outputs) {
    const auto* base = static_cast<const uint8_t*>(t.data);
    size_t i = 0;
    while (i < blocks_.size() &&
           !(base >= blocks_[i].bytes && base < blocks_[i].bytes + blocks_[i].size))
      ++i;
    if (i == blocks_.size()) continue;  // not ours: nothing of ours may change through it
    const size_t elem = dtype_size(t.dtype);
    const auto* block = blocks_[i].bytes;
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
    for (const auto& [lo, hi] : readable_ranges(b)) {
      if (std::memcmp(b.bytes + lo, b.before.data() + lo, hi - lo) == 0) continue;
      for (size_t k = lo; k < hi; ++k) {
        if (b.bytes[k] == b.before[k] || allowed[i][k]) continue;
        const auto offset = static_cast<long long>(k) - static_cast<long long>(b.payload);
        const auto payload = static_cast<long long>(b.payload_size);
        const char* where = offset < 0          ? " (in the guard before it)"
                            : offset >= payload ? " (in the guard after it)"
                                                : " (padding or an input)";
        return "buffer #" + std::to_string(i) + " " + b.what + ", byte " + std::to_string(offset) +
               where;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> Arena::stray_read(const std::vector<NamedView>& views) const {
  for (const Block& b : blocks_) {
    for (bool after : {false, true}) {
      const uintptr_t at = touched(b, after);
      if (at == 0) continue;
      const auto payload = reinterpret_cast<uintptr_t>(b.bytes + b.payload);
      const std::string where =
          after ? "byte +" + std::to_string(at - (payload + b.payload_size)) + " after its end"
                : "byte -" + std::to_string(payload - at) + " before its start";
      std::string name = "buffer " + b.what, kind = "the";
      for (const NamedView& v : views) {
        const auto data = reinterpret_cast<uintptr_t>(v.view.data);
        if (data < payload || data >= payload + b.payload_size) continue;
        name = v.name, kind = v.output ? "output" : "input";
        if (!v.output) break;  // an in-place pair: the input is what was read
      }
      return "read outside " + kind + " " + name + " (" + where + ")";
    }
  }
  return std::nullopt;
}

}  // namespace posenc::harness
