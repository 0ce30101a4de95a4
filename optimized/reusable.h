// Per-thread buffers that outlive a call.
#pragma once

#include <hwy/aligned_allocator.h>

#include <cstdint>

namespace posenc::optimized {

// A buffer of n T that this thread keeps across calls, aligned for any Highway vector: a fresh one
// would fault its pages in on every call (about 12 µs per 4 KiB here), and malloc and free cost a
// small call more than its own work. One per type: a call uses at most one of each, and finds no
// values in it from before.
template <class T>
T* reusable(int64_t n) {
  thread_local hwy::AlignedFreeUniquePtr<T[]> buffer;
  thread_local int64_t capacity = 0;
  if (capacity < n) {
    buffer = hwy::AllocateAligned<T>(static_cast<size_t>(n));
    capacity = n;
  }
  return buffer.get();
}

}  // namespace posenc::optimized
