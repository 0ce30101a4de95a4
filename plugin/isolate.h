// run_isolated: runs a function in a child process with a time and a memory limit and brings its
// result back over a socket. Whatever the function does (crash, hang, exit, scribble over memory,
// fork, write garbage to its descriptors), the caller gets a report and carries on. Wire encodes a
// structured result as those bytes.
//
// The child is confined (see confinement() and README "Isolation"): its own PID namespace where
// the kernel allows one (every process it starts ends with it), a user namespace, no capabilities,
// PR_SET_NO_NEW_PRIVS and a seccomp filter that kills it for ptrace, process_vm_readv/writev or a
// signal to any process but itself; this process is made non-dumpable, so /proc/<pid>/mem and
// ptrace of it are closed to the child.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace posenc::plugin {

struct Isolated {
  enum class Status : uint8_t {
    ok,         // fn returned; `result` holds its value
    threw,      // fn threw; `error` holds what()
    crashed,    // killed by a signal, or exited before fn returned
    timed_out,  // still running at the deadline; killed
    broke,      // the reply was malformed, unsolicited or never came over a closed channel; the
                // child left a process running; or it went past its memory limit. Killed.
  };
  Status status = Status::ok;
  std::string result;
  std::string
      error;  // what(), or "killed by SIGSEGV (Segmentation fault)", "timed out after 2 s"...
  std::string output;  // the last bytes the child wrote to stdout and stderr

  bool ok() const { return status == Status::ok; }
  // What happened, then the output's last lines when there are any.
  std::string describe() const;
};

inline constexpr size_t kOutputTail = 4096;
inline constexpr size_t kMaxReply = size_t{64} << 20;  // a longer reply is malformed

// A quarter of this machine's RAM: the default memory limit of a child.
size_t default_memory_limit();

// What confines a child on this machine, probed once in a child: "PID namespace, user namespace,
// no capabilities, seccomp filter, non-dumpable parent", then one line per protection that could
// not be applied and what that leaves open.
std::string confinement();

// Runs fn() in a forked, confined child whose stdin is /dev/null and whose stdout and stderr are
// captured. The child starts as a copy of this process and its writes to memory stay its own:
// hand data back through the result, or through shared memory (see Mirror). At the deadline, past
// `memory_limit` bytes of the child's own memory (0: none), or when fn returns with a process it
// started still running, the child and every process it started are killed. Never throws for
// anything the child does.
Isolated run_isolated(const std::function<std::string()>& fn, std::chrono::duration<double> timeout,
                      size_t memory_limit = 0);

// A child process that serves requests one at a time for as long as it lives, so that a run of
// many calls pays for one fork, not one per call. Each call gets what run_isolated gives: the
// reply, or what happened instead (a crash, a hang past the timeout, an exception, a broken reply)
// with the output the call produced. A child that crashed, hung or broke the protocol is gone; the
// next call starts a fresh one, forked from this process as it is then. Nothing the child sends is
// trusted: each reply must carry its request's sequence number and a sane length, and bytes
// nobody asked for fail the call they arrive in.
class Worker {
 public:
  // `serve` runs in the child, once per request; what it returns is the reply. State it keeps
  // (a library it opened on the first request) lives as long as the child.
  explicit Worker(std::function<std::string(std::string_view request)> serve,
                  size_t memory_limit = 0);
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker();  // kills the child

  Isolated call(std::string_view request, std::chrono::duration<double> timeout);
  int children_started() const { return started_; }

 private:
  void start();
  void stop();  // kills and reaps the child and all it started; wait_status_ says how it ended
  bool exited_within(std::chrono::milliseconds grace);  // reaps the child if it exits in time
  std::function<std::string(std::string_view)> serve_;
  size_t memory_limit_ = 0, inherited_ = 0;  // bytes; inherited_: our own memory at the fork
  int pid_ = -1, keeper_ = -1, channel_ = -1, output_ = -1, exit_fd_ = -1, wait_status_ = 0,
      started_ = 0;
  uint64_t sequence_ = 0;
  bool reaped_ = false;
};

// The bytes of a structured result: fixed-size numbers and length-prefixed strings, read back in
// the order they were written. Both ends are the same binary, so numbers travel as their bytes.
class WireWriter {
 public:
  template <class T>
  requires std::is_arithmetic_v<T> WireWriter& put(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
    return *this;
  }
  WireWriter& put(std::string_view text) {
    put<uint64_t>(text.size());
    bytes_.append(text);
    return *this;
  }
  WireWriter& put(const char* text) { return put(std::string_view(text)); }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}

  template <class T>
  requires std::is_arithmetic_v<T> T get() {
    T value;
    std::memcpy(&value, take(sizeof value).data(), sizeof value);
    return value;
  }
  std::string get_string() { return std::string(take(get<uint64_t>())); }
  bool done() const { return bytes_.empty(); }

 private:
  std::string_view take(size_t n) {
    if (n > bytes_.size()) throw std::runtime_error("truncated wire message");
    std::string_view head = bytes_.substr(0, n);
    bytes_.remove_prefix(n);
    return head;
  }
  std::string_view bytes_;
};

}  // namespace posenc::plugin
