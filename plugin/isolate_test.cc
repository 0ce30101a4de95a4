#include "plugin/isolate.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace posenc::plugin {
namespace {

using namespace std::chrono_literals;
using Status = Isolated::Status;

// Under AddressSanitizer a fatal signal becomes a report on stderr and exit status 1.
void expect_killed_by(const Isolated& r, const std::string& signal) {
  EXPECT_EQ(r.status, Status::crashed) << r.describe();
  const bool named = r.error.find(signal) != std::string::npos ||
                     r.output.find(signal.substr(3)) != std::string::npos;
  EXPECT_TRUE(named) << signal << " not in: " << r.describe();
}

TEST(RunIsolated, ReturnsTheResult) {
  const Isolated r = run_isolated([] { return std::string("forty-two"); }, 10s);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.result, "forty-two");
}

TEST(RunIsolated, CarriesAResultLargerThanThePipe) {
  const std::string big(3 << 20, 'x');
  const Isolated r = run_isolated([&] { return big + "end"; }, 30s);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.result.size(), big.size() + 3);
  EXPECT_EQ(r.result.substr(big.size()), "end");
}

TEST(RunIsolated, TheChildsWritesStayInTheChild) {
  int value = 1;
  const Isolated r = run_isolated(
      [&] {
        value = 2;
        return std::to_string(value);
      },
      10s);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.result, "2");
  EXPECT_EQ(value, 1);
}

TEST(RunIsolated, ReportsAnException) {
  const Isolated r =
      run_isolated([]() -> std::string { throw std::runtime_error("bad table"); }, 10s);
  EXPECT_EQ(r.status, Status::threw);
  EXPECT_EQ(r.error, "bad table");
  EXPECT_EQ(r.describe(), "threw: bad table");
}

TEST(RunIsolated, ReportsASegfault) {
  const Isolated r = run_isolated(
      []() -> std::string {
        std::raise(SIGSEGV);
        return "unreachable";
      },
      10s);
  expect_killed_by(r, "SIGSEGV");
}

TEST(RunIsolated, ReportsAnAbortWithItsOutput) {
  const Isolated r = run_isolated(
      []() -> std::string {
        std::fprintf(stderr, "assertion failed: x < n\n");
        std::abort();
      },
      10s);
  expect_killed_by(r, "SIGABRT");
  EXPECT_NE(r.output.find("assertion failed: x < n"), std::string::npos) << r.describe();
  EXPECT_NE(r.describe().find("assertion failed: x < n"), std::string::npos);
}

TEST(RunIsolated, ReportsAnExitBeforeReturning) {
  const Isolated r = run_isolated([]() -> std::string { std::exit(3); }, 10s);
  EXPECT_EQ(r.status, Status::crashed);
  EXPECT_EQ(r.error, "exited with status 3 before returning");
}

TEST(RunIsolated, KillsAHangAtTheDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const Isolated r = run_isolated(
      []() -> std::string {
        for (volatile bool forever = true; forever;) {
        }
        return "";
      },
      300ms);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, Status::timed_out);
  EXPECT_EQ(r.error, "timed out after 0.3 s (killed)");
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 5s);
}

TEST(RunIsolated, KillsWhatAHangingChildStarted) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const Isolated r = run_isolated(
      [&]() -> std::string {
        if (fork() == 0) {  // a grandchild that would sleep for a minute
          close(fds[0]);
          sleep(60);
          _exit(0);
        }
        pause();
        return "";
      },
      300ms);
  EXPECT_EQ(r.status, Status::timed_out);
  // Every holder of the pipe's write end is dead once reading it gives end of file.
  close(fds[1]);
  char byte;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(read(fds[0], &byte, 1), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  close(fds[0]);
}

TEST(RunIsolated, AProcessLeftRunningIsAFailureAndIsEnded) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const Isolated r = run_isolated(
      [&] {
        if (fork() == 0) {  // double fork and setsid: a daemon, holding the pipe's write end
          if (fork() == 0) {
            setsid();
            close(fds[0]);
            sleep(60);
          }
          _exit(0);
        }
        return std::string("done");
      },
      20s);
  EXPECT_EQ(r.status, Status::broke);
  EXPECT_NE(r.error.find("left a process running"), std::string::npos) << r.describe();
  close(fds[1]);
  char byte;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(read(fds[0], &byte, 1), 0);  // the daemon is gone
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  close(fds[0]);
}

TEST(RunIsolated, TheChildCannotSignalItsParent) {
  const pid_t parent = getpid();
  const Isolated r = run_isolated(
      [&] {
        kill(parent, SIGSTOP);
        return std::string("not stopped");
      },
      10s);
  expect_killed_by(r, "SIGSYS");
}

TEST(RunIsolated, TheChildCannotOpenItsParentsMemory) {
  const std::string path = "/proc/" + std::to_string(getpid()) + "/mem";
  const Isolated r = run_isolated(
      [&] {
        const int fd = open(path.c_str(), O_RDWR);
        return std::string(fd < 0 ? std::strerror(errno) : "opened");
      },
      10s);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.result, "Permission denied");
}

TEST(RunIsolated, AChildPastItsMemoryLimitIsKilledAndSaysSo) {
  const Isolated r = run_isolated(
      [] {
        std::vector<char> big(size_t{512} << 20, 1);  // touched: 512 MiB resident
        return std::to_string(big[12345]);
      },
      30s, size_t{64} << 20);
  EXPECT_EQ(r.status, Status::broke);
  EXPECT_NE(r.error.find("exceeded its 0.0625 GiB memory limit"), std::string::npos)
      << r.describe();
}

TEST(RunIsolated, SaysWhichProtectionsApply) {
  const std::string text = confinement();
  EXPECT_FALSE(text.empty());
  EXPECT_NE(text.find("seccomp filter"), std::string::npos) << text;
}

TEST(RunIsolated, KeepsOnlyTheTailOfTheOutput) {
  const Isolated r = run_isolated(
      [] {
        for (int i = 0; i < 10000; ++i) std::printf("line %d\n", i);
        return std::string();
      },
      10s);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_LE(r.output.size(), kOutputTail);
  EXPECT_NE(r.output.find("line 9999\n"), std::string::npos);
}

TEST(Wire, RoundTripsNumbersAndStrings) {
  const std::string bytes =
      WireWriter().put(int32_t{-7}).put(2.5).put("argument").put(std::string_view()).take();
  WireReader in(bytes);
  EXPECT_EQ(in.get<int32_t>(), -7);
  EXPECT_EQ(in.get<double>(), 2.5);
  EXPECT_EQ(in.get_string(), "argument");
  EXPECT_EQ(in.get_string(), "");
  EXPECT_TRUE(in.done());
}

TEST(Wire, RejectsATruncatedMessage) {
  const std::string bytes = WireWriter().put("argument").take();
  WireReader in(std::string_view(bytes).substr(0, bytes.size() - 1));
  EXPECT_THROW(in.get_string(), std::runtime_error);
}

}  // namespace
}  // namespace posenc::plugin

namespace posenc::plugin {
namespace {

using namespace std::chrono_literals;
using Status = Isolated::Status;

// A worker whose requests say what to do: "echo x", "crash", "hang", "throw", "exit", "count".
Worker test_worker() {
  return Worker([calls = 0](std::string_view request) mutable -> std::string {
    ++calls;
    if (request == "crash") raise(SIGSEGV);
    if (request == "hang")
      for (;;) pause();
    if (request == "throw") throw std::runtime_error("bad request");
    if (request == "exit") std::exit(3);
    if (request == "print") std::printf("printed by the call\n");
    if (request == "forge") (void)!write(3, "R\0\1\0\0", 5);  // a reply's header cut short
    if (request == "garbage") (void)!write(3, "garbage!garbage!garbage!garbage!", 32);
    if (request == "unsolicited") {  // a whole reply, then the real one: a call's worth too many
      const uint64_t header[2] = {0, 0};
      (void)!write(3, "R", 1), (void)!write(3, "", 1), (void)!write(3, header, sizeof header);
    }
    if (request == "close") close(3);
    if (request == "count") return std::to_string(calls);
    return "echo " + std::string(request);
  });
}

TEST(Worker, ServesManyRequestsWithOneChild) {
  Worker worker = test_worker();
  for (int i = 0; i < 50; ++i) {
    const Isolated r = worker.call(std::to_string(i), 10s);
    ASSERT_TRUE(r.ok()) << r.describe();
    EXPECT_EQ(r.result, "echo " + std::to_string(i));
  }
  EXPECT_EQ(worker.call("count", 10s).result, "51");  // the child's own state, kept across calls
  EXPECT_EQ(worker.children_started(), 1);
}

TEST(Worker, ACrashIsReportedAndTheNextCallGetsAFreshChild) {
  Worker worker = test_worker();
  EXPECT_TRUE(worker.call("a", 10s).ok());
  expect_killed_by(worker.call("crash", 10s), "SIGSEGV");
  const Isolated after = worker.call("count", 10s);
  ASSERT_TRUE(after.ok()) << after.describe();
  EXPECT_EQ(after.result, "1");
  EXPECT_EQ(worker.children_started(), 2);
}

TEST(Worker, AHangIsKilledAtTheTimeout) {
  Worker worker = test_worker();
  const auto start = std::chrono::steady_clock::now();
  const Isolated r = worker.call("hang", 0.2s);
  EXPECT_EQ(r.status, Status::timed_out) << r.describe();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(worker.call("b", 10s).result, "echo b");
}

TEST(Worker, AnExceptionIsReportedAndTheChildCarriesOn) {
  Worker worker = test_worker();
  const Isolated r = worker.call("throw", 10s);
  EXPECT_EQ(r.status, Status::threw);
  EXPECT_EQ(r.error, "bad request");
  EXPECT_EQ(worker.call("count", 10s).result, "2");
  EXPECT_EQ(worker.children_started(), 1);
}

TEST(Worker, AnExitIsACrashWithItsStatus) {
  Worker worker = test_worker();
  const Isolated r = worker.call("exit", 10s);
  EXPECT_EQ(r.status, Status::crashed);
  EXPECT_EQ(r.error, "exited with status 3 before returning");
}

TEST(Worker, AForgedShortReplyFailsThatCallAndTheNextStartsClean) {
  Worker worker = test_worker();
  EXPECT_TRUE(worker.call("a", 10s).ok());
  for (const char* forgery : {"forge", "garbage"}) {
    const auto start = std::chrono::steady_clock::now();
    const Isolated r = worker.call(forgery, 10s);
    EXPECT_EQ(r.status, Status::broke);
    EXPECT_NE(r.error.find("sent a malformed reply"), std::string::npos) << r.describe();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    const Isolated next = worker.call("b", 10s);
    ASSERT_TRUE(next.ok()) << next.describe();
    EXPECT_EQ(next.result, "echo b");
  }
}

TEST(Worker, BytesNobodyAskedForFailACallAndDoNotShiftTheChannel) {
  Worker worker = test_worker();
  const Isolated first = worker.call("unsolicited", 10s);
  // The reply cut short by what follows, or the call after it: one of the two fails, saying so.
  const Isolated second = worker.call("c", 10s);
  const Isolated& failed = first.ok() ? second : first;
  EXPECT_EQ(failed.status, Status::broke);
  EXPECT_NE(failed.error.find("bytes"), std::string::npos) << failed.describe();
  for (const char* request : {"d", "e"}) {
    const Isolated r = worker.call(request, 10s);
    ASSERT_TRUE(r.ok()) << r.describe();
    EXPECT_EQ(r.result, "echo " + std::string(request));
  }
}

TEST(Worker, AClosedChannelIsReportedAsSuch) {
  Worker worker = test_worker();
  const Isolated r = worker.call("close", 10s);
  EXPECT_EQ(r.status, Status::broke);
  EXPECT_EQ(r.error, "closed its channel to posenc (fd 3) without replying");
  EXPECT_EQ(worker.call("f", 10s).result, "echo f");
}

TEST(Worker, EachCallGetsItsOwnOutput) {
  Worker worker = test_worker();
  const Isolated printed = worker.call("print", 10s);
  ASSERT_TRUE(printed.ok()) << printed.describe();
  EXPECT_EQ(printed.output, "printed by the call\n");
  EXPECT_EQ(worker.call("quiet", 10s).output, "");
}

}  // namespace
}  // namespace posenc::plugin
