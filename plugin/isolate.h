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
