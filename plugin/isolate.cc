// The child process a plugin's code runs in (isolate.h): spawning it, its confinement (namespaces,
// capabilities, seccomp), the message channel, and ending it with everything it started. Over 600
// lines: the confinement steps and the channel are private parts of one child's set-up.
#include "plugin/isolate.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

namespace posenc::plugin {

namespace {

using Clock = std::chrono::steady_clock;

// The child's message on the channel: a tag ('R' result, 'E' exception), flags, the sequence
// number of the request it answers, the body's length, the body.
constexpr char kResult = 'R', kException = 'E';
constexpr uint8_t kLeftRunning = 1;  // flag: a process the call started was still running
constexpr size_t kHeader = 1 + 1 + 2 * sizeof(uint64_t);
constexpr auto kMemoryPoll = std::chrono::milliseconds(10);

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
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

// ---- Confinement ----

// What could not be applied, as lines for confinement(); the parent's part and the child's.
std::mutex gaps_mutex;
std::string parent_gaps;
std::string child_gaps;  // set in each child by confine()

void note_gap(std::string& gaps, const std::string& what) {
  if (gaps.find(what) == std::string::npos) gaps += what + "\n";
}

// No process, the children included, may read or write this one's memory through /proc or ptrace
// without CAP_SYS_PTRACE over it, which a confined child lacks.
void make_parent_undumpable() {
  if (prctl(PR_SET_DUMPABLE, 0) != 0) {
    std::lock_guard lock(gaps_mutex);
    note_gap(parent_gaps, std::string("this process stays dumpable (prctl: ") +
                              std::strerror(errno) +
                              "): a child running as this user can open /proc/<posenc>/mem");
  }
}

// A child and, when the kernel gave it a PID namespace, the namespace's init (the keeper): the
// child is pid 2 there, and killing the keeper ends every process in the namespace.
struct Spawned {
  pid_t pid = -1, keeper = -1;
};

[[noreturn]] void keeper_main() {
  setpgid(0, 0);  // out of the terminal's reach: Ctrl-C is posenc's to handle, not the keeper's
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  syscall(SYS_close_range, 0u, ~0u, 0u);
  for (;;) pause();  // init of the namespace: orphans it is handed die with it
}

// Forks `child` (which never returns), in a fresh PID namespace when this kernel allows it.
template <class Child>
Spawned spawn(Child&& child) {
  make_parent_undumpable();
  static const int own_namespace = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  Spawned s;
  // unshare(CLONE_NEWPID) sets the namespace of this thread's next children only; setns below
  // puts it back. Needs CAP_SYS_ADMIN (root, as CI runs).
  const bool namespaced = own_namespace >= 0 && unshare(CLONE_NEWPID) == 0;
  if (!namespaced) {
    std::lock_guard lock(gaps_mutex);
    note_gap(parent_gaps,
             std::string("no PID namespace (unshare: ") + std::strerror(errno) +
                 "): processes a plugin starts are found through /proc and killed with its child");
  }
  std::fflush(nullptr);  // or the child would inherit, and might print, our buffered output
  if (namespaced) {
    s.keeper = fork();
    if (s.keeper == 0) keeper_main();
    if (s.keeper > 0) setpgid(s.keeper, s.keeper);
  }
  if (!namespaced || s.keeper > 0) {
    s.pid = fork();
    if (s.pid == 0) child();
  }
  const int fork_errno = errno;
  if (namespaced) setns(own_namespace, CLONE_NEWPID);
  if (s.pid < 0) {
    if (s.keeper > 0) {
      kill(s.keeper, SIGKILL);
      waitpid(s.keeper, nullptr, 0);
    }
    throw std::system_error(fork_errno, std::system_category(), "fork");
  }
  setpgid(s.pid, s.pid);  // as the child does, so a kill right away already reaches its group
  return s;
}

// Every process below `root`, from /proc (the child is a subreaper: what it started and orphaned
// is still below it).
std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* e = readdir(proc)) {
      const pid_t pid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
      if (pid <= 0) continue;
      char path[64], stat[512];
      std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
      const int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      const ssize_t n = read(fd, stat, sizeof stat - 1);
      close(fd);
      if (n <= 0) continue;
      stat[n] = '\0';
      const char* after_name = std::strrchr(stat, ')');  // the name may hold spaces and parens
      int ppid = 0;
      if (after_name && std::sscanf(after_name + 1, " %*c %d", &ppid) == 1)
        children.emplace(ppid, pid);
    }
    closedir(proc);
  }
  std::vector<pid_t> found{root};
  for (size_t i = 0; i < found.size(); ++i)
    for (auto [it, end] = children.equal_range(found[i]); it != end; ++it)
      found.push_back(it->second);
  found.erase(found.begin());
  return found;
}

// Kills the child and all it started, and reaps it unless `reaped`.
void end(Spawned& s, int& wait_status, bool reaped) {
  if (s.pid < 0) return;
  if (s.keeper < 0)  // no namespace to end them all: kill its tree, again while it grows
    for (int round = 0; round < 8; ++round) {
      const auto tree = descendants(s.pid);
      if (tree.empty()) break;
      for (pid_t p : tree) kill(p, SIGKILL);
    }
  kill(-s.pid, SIGKILL);
  if (!reaped) {
    kill(s.pid, SIGKILL);
    while (waitpid(s.pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  if (s.keeper > 0) {  // its death ends every process left in the namespace
    kill(s.keeper, SIGKILL);
    while (waitpid(s.keeper, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  s = {};
}

void drop_capabilities() {
  for (int cap = 0; cap <= 63; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  if (syscall(SYS_capset, &header, none) != 0)
    note_gap(child_gaps, std::string("capabilities kept (capset: ") + std::strerror(errno) +
                             "): a child of a root posenc may open /proc/<posenc>/mem");
}

// Set in a child once its filter is in place (below).
bool confined = false;

// Kills the process for a system call that reaches outside it: tracing or reading another
// process, or signalling any process but itself.
void install_seccomp() {
  const scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (filter == nullptr) {
    note_gap(child_gaps,
             "no seccomp filter (seccomp_init failed): the child may signal processes of its user");
    return;
  }
  const uint32_t deny = SCMP_ACT_KILL_PROCESS;
  int rc = 0;
  for (int sys : {SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
                  SCMP_SYS(process_madvise), SCMP_SYS(pidfd_send_signal), SCMP_SYS(pidfd_getfd),
                  SCMP_SYS(kcmp)})
    rc |= seccomp_rule_add(filter, deny, sys, 0);
  const auto self = static_cast<scmp_datum_t>(getpid());
  for (int sys : {SCMP_SYS(kill), SCMP_SYS(tkill), SCMP_SYS(tgkill), SCMP_SYS(rt_sigqueueinfo),
                  SCMP_SYS(rt_tgsigqueueinfo)})
    rc |= seccomp_rule_add(filter, deny, sys, 1, SCMP_A0(SCMP_CMP_NE, self));
  // What it starts must stay below it, where posenc finds and ends it.
  rc |= seccomp_rule_add(filter, deny, SCMP_SYS(prctl), 1,
                         SCMP_A0(SCMP_CMP_EQ, PR_SET_CHILD_SUBREAPER));
  if (rc == 0) rc = seccomp_load(filter);  // also sets PR_SET_NO_NEW_PRIVS
  confined = rc == 0;
  if (rc != 0)
    note_gap(child_gaps, std::string("no seccomp filter (") + std::strerror(-rc) +
                             "): the child may ptrace, read or signal processes of its user");
  seccomp_release(filter);
}

// A user namespace, mapping root (or whoever runs posenc) to itself: capabilities the child
// still had would then hold in its own namespace only.
void enter_user_namespace() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER) != 0) {
    note_gap(child_gaps, std::string("no user namespace (unshare: ") + std::strerror(errno) +
                             "): the child runs as posenc's user, without capabilities");
    return;
  }
  auto write_file = [](const char* path, const std::string& text) {
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)!write(fd, text.data(), text.size());
    close(fd);
  };
  write_file("/proc/self/setgroups", "deny");
  write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1");
  write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
}

// What every child does first: its own process group, so that a kill reaches whatever it
// started; death with its parent; no core dump; no stdin; stdout and stderr into `output_fd`;
// then the confinement, last the seccomp filter.
void child_setup(int output_fd) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of what it starts stay below it
  const rlimit no_core{0, 0};        // a crash is expected here; skip the core dump
  setrlimit(RLIMIT_CORE, &no_core);
  if (int null = open("/dev/null", O_RDONLY); null >= 0) dup2(null, STDIN_FILENO);
  dup2(output_fd, STDOUT_FILENO);
  dup2(output_fd, STDERR_FILENO);
  enter_user_namespace();
  drop_capabilities();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    note_gap(child_gaps, std::string("no PR_SET_NO_NEW_PRIVS (") + std::strerror(errno) +
                             "): a setuid program may give the child privileges back");
  install_seccomp();
}

// Reaps what the call started and has ended; true when one is still running.
bool left_running() {
  for (;;) {
    const pid_t r = waitpid(-1, nullptr, WNOHANG);
    if (r > 0) continue;
    return r == 0;
  }
}

// fn's result or exception as a message: tag, flags, sequence number, length, body.
std::string message_of(const std::function<std::string()>& fn, uint64_t sequence) {
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
  message[1] = static_cast<char>(left_running() ? kLeftRunning : 0);
  const uint64_t size = body.size();
  std::memcpy(message.data() + 2, &sequence, sizeof sequence);
  std::memcpy(message.data() + 2 + sizeof sequence, &size, sizeof size);
  return message + body;
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
  std::string text = "killed by " +
                     (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig)) +
                     (description ? " (" + std::string(description) + ")" : "");
  if (sig == SIGSYS)
    text +=
        ": a system call posenc's sandbox forbids (ptrace, process_vm_readv/writev, or a signal "
        "to a process other than itself)";
  return text;
}

std::string seconds_text(std::chrono::duration<double> d) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", d.count());
  return text;
}

std::string gib_text(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g GiB", bytes / double(size_t{1} << 30));
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

// How a child that did not answer ended.
std::string ended(int wait_status) {
  return WIFSIGNALED(wait_status)
             ? signal_text(WTERMSIG(wait_status))
             : "exited with status " + std::to_string(WEXITSTATUS(wait_status)) +
                   " before returning";
}

// The child's own resident memory, shared memory (the mirrored tensors) aside.
size_t private_resident(pid_t pid) {
  char path[64], text[256];
  std::snprintf(path, sizeof path, "/proc/%d/statm", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  unsigned long size = 0, resident = 0, shared = 0;
  if (std::sscanf(text, "%lu %lu %lu", &size, &resident, &shared) != 3 || shared > resident)
    return 0;
  return (resident - shared) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

size_t default_memory_limit() {
  return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE)) /
         4;
}

std::string confinement() {
  const Isolated probe = run_isolated([] { return child_gaps; }, std::chrono::seconds(10));
  std::lock_guard lock(gaps_mutex);
  std::string gaps = parent_gaps + (probe.ok() ? probe.result : "the probe failed: " + probe.error);
  auto has = [&](const char* what) { return gaps.find(what) != std::string::npos; };
  std::string text;
  for (auto [gap, name] : {std::pair{"no PID namespace", "PID namespace"},
                           {"no user namespace", "user namespace"},
                           {"capabilities kept", "no capabilities"},
                           {"no seccomp", "seccomp filter"},
                           {"stays dumpable", "non-dumpable parent"}})
    if (!has(gap)) text += std::string(text.empty() ? "" : ", ") + name;
  return (text.empty() ? "none" : text) + (gaps.empty() ? "" : "\n" + gaps);
}

std::string Isolated::describe() const {
  std::string text = status == Status::threw ? "threw: " + error : error;
  if (output.empty()) return text;
  // The last few lines are where a sanitizer or an assert says what happened.
  size_t start = output.size();
  for (int lines = 0; start > 0 && lines < 12; --start) lines += output[start - 1] == '\n';
  text += "\n  output: " + output.substr(start);
  return text;
}

Isolated run_isolated(const std::function<std::string()>& fn, std::chrono::duration<double> timeout,
                      size_t memory_limit) {
  Worker once([&](std::string_view) { return fn(); }, memory_limit);
  return once.call("", timeout);
}

Worker::Worker(std::function<std::string(std::string_view)> serve, size_t memory_limit)
    : serve_(std::move(serve)), memory_limit_(memory_limit) {}

Worker::~Worker() { stop(); }

void Worker::start() {
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0)
    throw std::system_error(errno, std::system_category(), "socketpair");
  Pipe output;
  Spawned s;
  try {
    s = spawn([&] {
      child_setup(output.write);
      // Fd 3 is the channel; nothing else of the parent's stays open (another worker's channel
      // would keep that worker waiting for requests that never come).
      if (channel[1] != 3) dup2(channel[1], 3);
      syscall(SYS_close_range, 4u, ~0u, 0u);
      // A channel that fails (the kernel closed or overwrote fd 3) leaves the child waiting to
      // be killed, so that posenc tells a closed channel from an exit.
      auto lost = [] {
        for (;;) pause();
      };
      for (;;) {
        uint64_t header[2];  // length, sequence number
        if (!read_exact(3, reinterpret_cast<char*>(header), sizeof header)) lost();
        std::string request(header[0], '\0');
        if (!read_exact(3, request.data(), header[0])) lost();
        const std::string reply = message_of([&] { return serve_(request); }, header[1]);
        if (!write_all(3, reply.data(), reply.size())) lost();
      }
    });
  } catch (...) {
    close(channel[0]);
    close(channel[1]);
    throw;
  }
  close(channel[1]);
  output.close_write();
  pid_ = s.pid;
  keeper_ = s.keeper;
  channel_ = channel[0];
  output_ = output.read;
  output.read = -1;  // ours now
  for (int fd : {channel_, output_}) fcntl(fd, F_SETFL, O_NONBLOCK);
  exit_fd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  inherited_ = private_resident(getpid());  // the child starts with our pages: not its own use
  ++started_;
}

void Worker::stop() {
  if (pid_ < 0) return;
  Spawned s{pid_, keeper_};
  end(s, wait_status_, reaped_);
  reaped_ = false;
  for (int* fd : {&channel_, &output_, &exit_fd_})
    if (*fd >= 0) close(std::exchange(*fd, -1));
  pid_ = keeper_ = -1;
}

bool Worker::exited_within(std::chrono::milliseconds grace) {
  const auto until = Clock::now() + grace;
  for (;;) {
    const pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
    if (r == pid_) return reaped_ = true;
    const auto now = Clock::now();
    if (r < 0 || now >= until) return false;
    pollfd fd{exit_fd_, POLLIN, 0};
    poll(&fd, exit_fd_ >= 0 ? 1 : 0,
         exit_fd_ >= 0
             ? static_cast<int>(
                   std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1)
             : 2);
  }
}

Isolated Worker::call(std::string_view request, std::chrono::duration<double> timeout) {
  Isolated out;
  auto broke = [&](std::string why) {
    drain(output_, out.output);
    stop();  // the next call starts another child, on a clean channel
    out.status = Isolated::Status::broke;
    out.error = std::move(why);
    if (out.output.size() > kOutputTail) out.output.erase(0, out.output.size() - kOutputTail);
    return out;
  };
  if (pid_ >= 0) {
    std::string stale;  // what the child printed between calls belongs to no call
    drain(output_, stale);
    std::string unsolicited;
    drain(channel_, unsolicited);
    if (!unsolicited.empty())
      return broke("sent " + std::to_string(unsolicited.size()) +
                   " bytes on its channel to posenc after its last reply, which nothing asked "
                   "for");
  }
  if (pid_ < 0) start();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(timeout);
  const uint64_t sequence = ++sequence_;
  std::string framed(2 * sizeof(uint64_t), '\0');
  const uint64_t size = request.size();
  std::memcpy(framed.data(), &size, sizeof size);
  std::memcpy(framed.data() + sizeof size, &sequence, sizeof sequence);
  framed += request;
  // Requests are small; a child that is gone makes send fail (no SIGPIPE) and shows in waitpid.
  for (size_t sent = 0; sent < framed.size() && Clock::now() < deadline;) {
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
  for (;;) {
    const bool open = drain(channel_, message);
    drain(output_, out.output);
    keep_tail(out.output);
    if (message.size() >= kHeader) {
      uint64_t got_sequence, length;
      std::memcpy(&got_sequence, message.data() + 2, sizeof got_sequence);
      std::memcpy(&length, message.data() + 2 + sizeof got_sequence, sizeof length);
      if ((message[0] != kResult && message[0] != kException) ||
          (static_cast<uint8_t>(message[1]) & ~kLeftRunning) != 0 || got_sequence != sequence ||
          length > kMaxReply)
        return broke("sent a malformed reply on its channel to posenc (" +
                     std::to_string(message.size()) +
                     " bytes that are not the reply posenc expects; the library's code wrote to "
                     "posenc's channel)");
      if (message.size() - kHeader > length)
        return broke("sent " + std::to_string(message.size() - kHeader - length) +
                     " bytes more than its reply on its channel to posenc");
      if (message.size() - kHeader == length) break;
    }
    if (!open || waitpid(pid_, &wait_status_, WNOHANG) == pid_) {
      if (!open && !exited_within(std::chrono::milliseconds(50)))
        return broke("closed its channel to posenc (fd 3) without replying" +
                     std::string(message.empty() ? "" : " (a reply cut short)"));
      reaped_ = true;
      drain(output_, out.output);
      stop();
      if (out.output.size() > kOutputTail) out.output.erase(0, out.output.size() - kOutputTail);
      out.status = Isolated::Status::crashed;
      out.error = ended(wait_status_);
      return out;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      drain(output_, out.output);
      stop();
      if (out.output.size() > kOutputTail) out.output.erase(0, out.output.size() - kOutputTail);
      out.status = Isolated::Status::timed_out;
      out.error = "timed out after " + seconds_text(timeout) + " (killed)";
      return out;
    }
    if (memory_limit_ > 0 && now - start >= kMemoryPoll) {
      const size_t resident = private_resident(pid_);
      const size_t used = resident - std::min(resident, inherited_);
      if (used > memory_limit_)
        return broke("exceeded its " + gib_text(static_cast<double>(memory_limit_)) +
                     " memory limit (killed at " + gib_text(static_cast<double>(used)) + ")");
    }
    pollfd fds[3];
    nfds_t n = 0;
    for (int fd : {channel_, output_, exit_fd_})
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (exit_fd_ < 0) wait = std::min<int64_t>(wait, 5);
    if (memory_limit_ > 0) wait = std::min<int64_t>(wait, kMemoryPoll.count());
    poll(fds, n, static_cast<int>(wait));
  }
  if (static_cast<uint8_t>(message[1]) & kLeftRunning)
    return broke("left a process running when its call returned (posenc ended it)");
  out.status = message[0] == kResult ? Isolated::Status::ok : Isolated::Status::threw;
  (out.ok() ? out.result : out.error) = message.substr(kHeader);
  if (out.output.size() > kOutputTail) out.output.erase(0, out.output.size() - kOutputTail);
  return out;
}

}  // namespace posenc::plugin

// LeakSanitizer's exit check stops the world with ptrace, which a confined child's filter forbids:
// in an ASan build it would be killed or hang at exit, so it is off there (a documented hook of
// <sanitizer/lsan_interface.h>; without LSan nothing calls it).
extern "C" __attribute__((visibility("default"))) int __lsan_is_turned_off() {
  return posenc::plugin::confined ? 1 : 0;
}
