#include "plugin/isolate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

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

TEST(RunIsolated, ReturnsWhenAGrandchildKeepsTheOutputOpen) {
  const auto start = std::chrono::steady_clock::now();
  const Isolated r = run_isolated(
      [] {
        if (fork() == 0) {
          sleep(60);
          _exit(0);
        }
        return std::string("done");
      },
      20s);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.result, "done");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
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

TEST(Worker, EachCallGetsItsOwnOutput) {
  Worker worker = test_worker();
  const Isolated printed = worker.call("print", 10s);
  ASSERT_TRUE(printed.ok()) << printed.describe();
  EXPECT_EQ(printed.output, "printed by the call\n");
  EXPECT_EQ(worker.call("quiet", 10s).output, "");
}

}  // namespace
}  // namespace posenc::plugin
