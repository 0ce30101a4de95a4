// The parent's side of a plugin: one persistent child per library (Worker) that serves its
// kernels' calls (server.h), the shared memory their arguments and tensors are mirrored into, and
// run_kernel, one call's way there and back.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "plugin/isolate.h"
#include "plugin/loader.h"
#include "plugin/marshal.h"
#include "plugin/mirror.h"
#include "plugin/server.h"

namespace posenc::plugin {

// Where a registry entry's kernel lives.
struct Source {
  std::string path, kernel, impl;  // library, kernel's own name, registry name
  uint32_t index = 0;
  std::chrono::duration<double> timeout;
};

// One library's child and shared memory. Outside a call the child keeps all of that memory
// inaccessible; a call opens exactly its own pages.
class Host {
 public:
  Host(const std::string& path, size_t memory_limit);
  ~Host();
  int& hangs() { return hangs_; }  // calls that hung so far
  // Where the last call's kernel faulted, as its child recorded it (zero when it did not).
  FaultRecord last_fault() const { return fault_ ? *fault_ : FaultRecord{}; }

  std::mutex& mutex() { return mutex_; }
  SharedMemory& memory() { return memory_; }
  // Runs the kernel on the argument struct at `args` (in memory()), the child opening `writable`
  // and `readable` for the call, and calling it `calls` times in a row (CallRequest::calls).
  Isolated call(const Source& source, const void* args,
                const std::vector<std::pair<uint8_t*, size_t>>& writable,
                const std::vector<std::pair<uint8_t*, size_t>>& readable, uint32_t calls = 1);

 private:
  uint64_t offset(const void* at) const {
    return static_cast<uint64_t>(static_cast<const uint8_t*>(at) - memory_.base());
  }

  SharedMemory memory_;  // before worker_: the child must inherit it
  FaultRecord* fault_;   // a shared page, likewise
  Worker worker_;
  std::mutex mutex_;
  int hangs_ = 0;
};

// Turns the child's answer into the caller's: KernelFailure for a crash, a hang, a stray write or
// a failure code, posenc::Error for a rejected argument. Copies the outputs back first, even after
// a crash, so that the caller's guard bytes show what the kernel wrote. A crash whose `fault`
// lies on a guard page of the mirror is reported as the read (or write) outside that tensor.
void finish_call(const Source& source, const Isolated& isolated, Tensors& tensors,
                 const FaultRecord& fault = {});

// One call of a library's kernel, on a copy of `call` mirrored into the host's memory; or `calls`
// of them in a row on that copy, in one way there and back (0: the way alone, the isolation's
// cost).
template <class Call>
void run_kernel(const Source& source, Host& host, const Call& call, uint32_t calls = 1) {
  std::lock_guard lock(host.mutex());
  if (host.hangs() >= kMaxHangs)
    throw KernelFailure(source.impl + " not called: its library hung " + std::to_string(kMaxHangs) +
                        " times already");
  host.memory().reset();
  Call copy = call;
  Block block(host.memory());
  Tensors tensors(host.memory(), block, copy);
  const void* shared_args = c_args(copy, tensors);
  tensors.map();
  const Isolated isolated =
      host.call(source, shared_args, tensors.mirror().accessible(), block.chunks(), calls);
  if (isolated.status == Isolated::Status::timed_out) ++host.hangs();
  finish_call(source, isolated, tensors, host.last_fault());
}

}  // namespace posenc::plugin
