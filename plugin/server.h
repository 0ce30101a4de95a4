// The child's side of a plugin. A library's code runs only in child processes (isolate.h):
// read_table() is what load() runs in a short-lived one, serve() what each call runs in the
// library's persistent one (Worker), on a request the parent's Host wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "posenc/plugin.h"

namespace posenc::plugin {

inline constexpr size_t kMaxName = 64;         // characters of a kernel's name
inline constexpr uint32_t kMaxKernels = 4096;  // kernels in one library's table

// Opens the library and returns its table's entries, checked, as wire bytes: the count, then per
// kernel its name, family, flags, variants and bound. Throws LoadError.
std::string read_table(const std::string& path);

// One call, as the parent asks for it: the kernel (its index and name in the table), the offset of
// its argument struct in the shared memory, and the pages it may touch.
struct CallRequest {
  struct Pages {
    uint64_t offset = 0, length = 0;
    int protection = 0;
  };
  uint32_t index = 0;
  std::string kernel;
  uint64_t args = 0;
  std::vector<Pages> pages;
  // The kernel's calls in a row on the same tensors (`posenc bench`): 0 opens and closes the pages
  // only, measuring the isolation's own cost; many make that cost small beside theirs.
  uint32_t calls = 1;

  std::string encode() const;
  static CallRequest decode(std::string_view bytes);
};

// Where the last call's kernel faulted, written by the child's SIGSEGV/SIGBUS handler into a page
// shared with the parent, which reads it after a crash to name the tensor a read or write
// touched past (Mirror::fault_at). Written by the child: a hint to check, never trusted.
struct FaultRecord {
  uint64_t address = 0;  // si_addr; 0: no fault
  int32_t signal = 0;
  int32_t access = 0;  // kFaultRead, kFaultWrite, or 0 where the CPU does not say
};
inline constexpr int32_t kFaultRead = 1, kFaultWrite = 2;

// The library's table in the worker, opened on its first call.
struct Served {
  std::string path;
  uint8_t* base = nullptr;  // the shared memory, kept inaccessible outside a call
  size_t size = 0;
  const posenc_plugin* table = nullptr;
  FaultRecord* fault = nullptr;  // shared with the parent; null: no record
};

// Runs one request: opens the call's pages, runs the kernel, closes them again. The reply is the
// kernel's code and its error fields.
std::string serve(Served& served, std::string_view request);

}  // namespace posenc::plugin
