// run_isolated: runs a function in a child process with a time limit and brings its result back
// through a pipe. Whatever the function does (crash, hang, exit, scribble over memory), the
// caller gets a report and carries on. Wire encodes a structured result as those bytes.
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

// Runs fn() in a forked child whose stdin is /dev/null and whose stdout and stderr are captured.
// The child starts as a copy of this process and its writes to memory stay its own: hand data back
// through the result, or through shared memory (see Mirror). At the deadline the child and every
// process it started are killed. Never throws for anything the child does.
Isolated run_isolated(const std::function<std::string()>& fn,
                      std::chrono::duration<double> timeout);

// A child process that serves requests one at a time for as long as it lives, so that a run of
// many calls pays for one fork, not one per call. Each call gets what run_isolated gives: the
// reply, or what happened instead (a crash, a hang past the timeout, an exception) with the
// output the call produced. A child that crashed or hung is gone; the next call starts a fresh
// one, forked from this process as it is then.
class Worker {
 public:
  // `serve` runs in the child, once per request; what it returns is the reply. State it keeps
  // (a library it opened on the first request) lives as long as the child.
  explicit Worker(std::function<std::string(std::string_view request)> serve);
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker();  // kills the child

  Isolated call(std::string_view request, std::chrono::duration<double> timeout);
  int children_started() const { return started_; }

 private:
  void start();
  void stop();  // kills and reaps the child; wait_status_ says how it ended
  std::function<std::string(std::string_view)> serve_;
  int pid_ = -1, channel_ = -1, output_ = -1, exit_fd_ = -1, wait_status_ = 0, started_ = 0;
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
