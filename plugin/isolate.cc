#include "plugin/isolate.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <system_error>
#include <utility>

namespace posenc::plugin {

namespace {

using Clock = std::chrono::steady_clock;

// The child's message on the result pipe: a tag ('R' result, 'E' exception), the body's length,
// the body. A message cut short means the child died before fn returned.
constexpr char kResult = 'R', kException = 'E';
constexpr size_t kHeader = 1 + sizeof(uint64_t);

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nothing left to tell
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// What every child does first: its own process group, so that a kill reaches whatever it
// started; death with its parent; no core dump; no stdin; stdout and stderr into `output_fd`.
void child_setup(int output_fd) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const rlimit no_core{0, 0};  // a crash is expected here; skip the core dump
  setrlimit(RLIMIT_CORE, &no_core);
  if (int null = open("/dev/null", O_RDONLY); null >= 0) dup2(null, STDIN_FILENO);
  dup2(output_fd, STDOUT_FILENO);
  dup2(output_fd, STDERR_FILENO);
}

// fn's result or exception as a message: tag, length, body.
std::string message_of(const std::function<std::string()>& fn) {
  char tag = kResult;
  std::string body;
  try {
    body = fn();
  } catch (const std::exception& e) {
    tag = kException;
    body = e.what();
  } catch (...) {
    tag = kException;
    body = "an exception that is not a std::exception";
  }
  std::fflush(nullptr);
  std::string message(kHeader, '\0');
  message[0] = tag;
  const uint64_t size = body.size();
  std::memcpy(message.data() + 1, &size, sizeof size);
  return message + body;
}

[[noreturn]] void child(const std::function<std::string()>& fn, int result_fd, int output_fd) {
  child_setup(output_fd);
  const std::string message = message_of(fn);
  write_all(result_fd, message.data(), message.size());
  _exit(0);  // no atexit handlers, no destructors: this is a copy of the parent
}

// Reads what is available on fd into `into`, a bounded amount so that a child that never stops
// writing can't hold us here; false at end of file.
bool drain(int fd, std::string& into) {
  char buffer[65536];
  for (int chunk = 0; chunk < 64; ++chunk) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      into.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    return false;
  }
  return true;
}

void keep_tail(std::string& output) {
  if (output.size() > 2 * kOutputTail) output.erase(0, output.size() - kOutputTail);
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* description = sigdescr_np(sig);
  return "killed by " + (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig)) +
         (description ? " (" + std::string(description) + ")" : "");
}

std::string seconds_text(std::chrono::duration<double> d) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", d.count());
  return text;
}

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::system_category(), "pipe");
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() { close_both(); }
  void close_read() { close_fd(read); }
  void close_write() { close_fd(write); }
  void close_both() {
    close_read();
    close_write();
  }
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool complete(const std::string& message) {
  uint64_t size = 0;
  if (message.size() >= kHeader) std::memcpy(&size, message.data() + 1, sizeof size);
  return message.size() >= kHeader && message.size() - kHeader == size;
}

// A complete message's result or exception into `out`.
void take(Isolated& out, const std::string& message) {
  out.status = message[0] == kResult ? Isolated::Status::ok : Isolated::Status::threw;
  (out.ok() ? out.result : out.error) = message.substr(kHeader);
}

// How a child that did not answer ended.
std::string ended(int wait_status) {
  return WIFSIGNALED(wait_status)
             ? signal_text(WTERMSIG(wait_status))
             : "exited with status " + std::to_string(WEXITSTATUS(wait_status)) +
                   " before returning";
}

// Blocking reads of exactly n bytes; false at end of file.
bool read_exact(int fd, char* data, size_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, data, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    data += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

std::string Isolated::describe() const {
  std::string text = status == Status::threw ? "threw: " + error : error;
  if (output.empty()) return text;
  // The last few lines are where a sanitizer or an assert says what happened.
  size_t start = output.size();
  for (int lines = 0; start > 0 && lines < 12; --start) lines += output[start - 1] == '\n';
  text += "\n  output: " + output.substr(start);
  return text;
}

Isolated run_isolated(const std::function<std::string()>& fn,
                      std::chrono::duration<double> timeout) {
  Pipe result_pipe, output_pipe;
  std::fflush(nullptr);  // or the child would inherit, and might print, our buffered output
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  const pid_t pid = fork();
  if (pid < 0) throw std::system_error(errno, std::system_category(), "fork");
  if (pid == 0) child(fn, result_pipe.write, output_pipe.write);
  setpgid(pid, pid);  // as the child does, so a kill right away already reaches its group
  result_pipe.close_write();
  output_pipe.close_write();
  for (int fd : {result_pipe.read, output_pipe.read}) fcntl(fd, F_SETFL, O_NONBLOCK);

  // Wake on output, and on the child's exit through a pidfd (or every few ms without one). The
  // pipes may stay open in grandchildren, so only the exit ends the wait.
  const int exit_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  Isolated out;
  std::string message;
  int wait_status = 0;
  bool timed_out = false;
  for (;;) {
    if (result_pipe.read >= 0 && !drain(result_pipe.read, message)) result_pipe.close_read();
    if (output_pipe.read >= 0 && !drain(output_pipe.read, out.output)) output_pipe.close_read();
    keep_tail(out.output);
    const pid_t r = waitpid(pid, &wait_status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    const auto now = Clock::now();
    if (now >= deadline) {
      timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    for (int fd : {result_pipe.read, output_pipe.read, exit_fd})
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (exit_fd < 0) wait = std::min<int64_t>(wait, 5);
    poll(fds, n, static_cast<int>(wait));  // an error just means one more turn to the deadline
  }
  if (exit_fd >= 0) close(exit_fd);
  // What the child wrote before it exited is still in the pipes.
  if (result_pipe.read >= 0) drain(result_pipe.read, message);
  if (output_pipe.read >= 0) drain(output_pipe.read, out.output);
  if (out.output.size() > kOutputTail) out.output.erase(0, out.output.size() - kOutputTail);
  kill(-pid, SIGKILL);  // whatever the child left running; its group id is not reused until then

  if (timed_out) {
    out.status = Isolated::Status::timed_out;
    out.error = "timed out after " + seconds_text(timeout) + " (killed)";
  } else if (complete(message)) {
    take(out, message);
  } else {
    out.status = Isolated::Status::crashed;
    out.error = ended(wait_status);
  }
  return out;
}

Worker::Worker(std::function<std::string(std::string_view)> serve) : serve_(std::move(serve)) {}

Worker::~Worker() { stop(); }

void Worker::start() {
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0)
    throw std::system_error(errno, std::system_category(), "socketpair");
  Pipe output;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(channel[0]);
    close(channel[1]);
    throw std::system_error(errno, std::system_category(), "fork");
  }
  if (pid == 0) {
    child_setup(output.write);
    // Fd 3 is the channel; nothing else of the parent's stays open (another worker's channel
    // would keep that worker waiting for requests that never come).
    if (channel[1] != 3) dup2(channel[1], 3);
    syscall(SYS_close_range, 4u, ~0u, 0u);
    for (;;) {
      uint64_t size = 0;
      if (!read_exact(3, reinterpret_cast<char*>(&size), sizeof size)) _exit(0);
      std::string request(size, '\0');
      if (!read_exact(3, request.data(), size)) _exit(0);
      const std::string reply = message_of([&] { return serve_(request); });
      write_all(3, reply.data(), reply.size());
    }
  }
  setpgid(pid, pid);
  close(channel[1]);
  output.close_write();
  pid_ = pid;
  channel_ = channel[0];
  output_ = output.read;
  output.read = -1;  // ours now
  for (int fd : {channel_, output_}) fcntl(fd, F_SETFL, O_NONBLOCK);
  exit_fd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  ++started_;
}

void Worker::stop() {
  if (pid_ < 0) return;
  kill(-pid_, SIGKILL);  // its group too: what it started
  if (!reaped_) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
    }
  }
  reaped_ = false;
  for (int* fd : {&channel_, &output_, &exit_fd_})
    if (*fd >= 0) close(std::exchange(*fd, -1));
  pid_ = -1;
}

Isolated Worker::call(std::string_view request, std::chrono::duration<double> timeout) {
  if (pid_ < 0) start();
  Isolated out;
  std::string stale;  // what the child printed between calls belongs to no call
  drain(output_, stale);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  std::string framed(sizeof(uint64_t), '\0');
  const uint64_t size = request.size();
  std::memcpy(framed.data(), &size, sizeof size);
  framed += request;
  // Requests are small; a child that is gone makes send fail (no SIGPIPE) and shows in waitpid.
  for (size_t sent = 0; sent < framed.size();) {
    const ssize_t n = send(channel_, framed.data() + sent, framed.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd fd{channel_, POLLOUT, 0};
      poll(&fd, 1, 5);
    } else {
      break;
    }
  }
  std::string message;
  bool timed_out = false, died = false;
  for (;;) {
    const bool open = drain(channel_, message);
    drain(output_, out.output);
    keep_tail(out.output);
    if (complete(message)) break;
    const pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
    if (!open || r == pid_) {
      died = true;
      if (r == pid_) reaped_ = true;
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    for (int fd : {channel_, output_, exit_fd_})
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (exit_fd_ < 0) wait = std::min<int64_t>(wait, 5);
    poll(fds, n, static_cast<int>(wait));
  }
  if (timed_out || died) {
    drain(output_, out.output);
    stop();  // kills and reaps what is left; the next call starts another child
  }
  if (out.output.size() > kOutputTail) out.output.erase(0, out.output.size() - kOutputTail);
  if (timed_out) {
    out.status = Isolated::Status::timed_out;
    out.error = "timed out after " + seconds_text(timeout) + " (killed)";
  } else if (died) {
    out.status = Isolated::Status::crashed;
    out.error = ended(wait_status_);
  } else {
    take(out, message);
  }
  return out;
}

}  // namespace posenc::plugin
