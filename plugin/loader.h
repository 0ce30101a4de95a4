// The plugin loader: reads a kernel library's table (include/posenc/plugin.h) and turns each kernel
// into a registry entry, Impl<Call>, that the harness runs like any built-in implementation.
//
// The library's code never runs in this process. load() reads the table in a child process; the
// calls of a library's kernels run in one persistent child of its own (Worker), on tensors
// mirrored into shared memory between poisoned bytes and guard pages (Mirror). A crash, a hang,
// an exit or a write outside the tensors becomes a KernelFailure thrown from Impl::run (and the
// next call gets a fresh child), bad input the kernel rejects becomes posenc::Error, and the
// caller carries on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "posenc/registry.h"

namespace posenc::plugin {

// The library could not be loaded: a bad path, a missing symbol, an ABI version mismatch, a
// malformed table, or a crash or hang while loading. `posenc validate` exits 2 on it.
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A kernel call that did not complete: the kernel crashed, hung, exited, wrote outside its tensors
// or returned POSENC_FAILED.
class KernelFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  std::chrono::duration<double> timeout{10.0};  // per kernel call, and for loading
  size_t memory_limit = 0;                      // bytes of the child's own memory; 0: none
};

// After this many hung calls, a library's kernels are not called again (each hang costs a call's
// whole timeout); the calls fail at once saying so.
inline constexpr int kMaxHangs = 3;

template <class Call>
using Repeated = std::function<void(const Call&, uint32_t calls)>;

// The kernels of one library, as registry entries named "<family>/<kernel name>".
class Plugin {
 public:
  const std::string& path() const { return path_; }  // as resolved (absolute)

  template <class Call>
  const std::vector<Impl<Call>>& kernels() const {
    return std::get<std::vector<Impl<Call>>>(kernels_);
  }
  size_t size() const;  // kernels in every family
  // Per kernel of kernels<Call>(), a call made `calls` times in a row within one way to its child
  // and back (the tensors mirrored in, the call's pages opened and closed there, the changes
  // copied back); 0 calls: that way alone, the isolation's cost (`posenc bench`).
  template <class Call>
  const std::vector<Repeated<Call>>& repeated() const {
    return std::get<std::vector<Repeated<Call>>>(repeated_);
  }

 private:
  friend Plugin load(const std::string& path, const Options& options);
  friend void read_kernels(Plugin& plugin, const std::string& bytes, const Options& options);
  std::string path_;
  template <class... Calls>
  using Lists = std::tuple<std::vector<Impl<Calls>>...>;
  AllCalls::apply<Lists> kernels_;  // one list per family
  template <class... Calls>
  using RepeatedLists = std::tuple<std::vector<Repeated<Calls>>...>;
  AllCalls::apply<RepeatedLists> repeated_;
};

// Loads the library at `path`; throws LoadError with a message that says what is wrong.
Plugin load(const std::string& path, const Options& options = {});

}  // namespace posenc::plugin
