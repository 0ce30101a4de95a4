// posenc bench --kernel: bench/'s cases arrive through case_sink() instead of becoming
// posenc_bench's rows; each case a plugin kernel supports becomes four rows per thread count:
//   posenc/<family>/optimized/<label>/threads:N   posenc's dispatcher, on the same buffers
//   plugin/<family>/<kernel>/<label>/threads:N    one call through its child, as validate makes it
//   isolation/<family>/<kernel>/<label>/threads:N the same way there and back, kernel not called
//   repeated/<family>/<kernel>/<label>/threads:N  R calls in a row within one way there and back
// The kernel's own time per call is (repeated − isolation) / R, with R chosen so that the calls
// take about 8 times the way's cost. The plugin's output is checked once before it is timed.
#include "tools/bench_kernel.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <vector>

#include "bench/bench.h"
#include "plugin/isolate.h"
#include "plugin/loader.h"
#include "properties/harness.h"
#include "properties/property.h"
#include "properties/report.h"

namespace posenc::tools {

namespace {

using namespace posenc::bench;

// One plugin kernel on one case at one thread count: the names of its four rows.
struct Line {
  std::string kernel, label;
  int threads = 1;
  double bytes = 0;
  std::string plugin, isolation, repeated, posenc;  // row names
  std::string posenc_impl;                          // "rope/optimized"
  std::string checked;  // what the output was checked against, or why it failed
};

struct Plan {
  std::vector<Line> lines;
  std::vector<std::string> unsupported;         // "rope/example on <label>: needs ..."
  std::set<std::string> posenc_rows;            // registered once per case and thread count
  std::map<std::string, std::string> verdicts;  // plugin row → "" (ok) or what was wrong
  std::map<std::string, std::string> checked;   // plugin row → what it was checked against
  std::map<std::string, uint32_t> calls;        // plugin row → R, the repeated row's calls
  double call_timeout = 10;                     // seconds
};

// Google Benchmark's console lines as it runs, and each row's figures for the table: the median
// with repetitions, else the one run.
class Collector : public benchmark::ConsoleReporter {
 public:
  struct Figures {
    double ns = 0, roof_gbps = 0;
    std::string error;
  };
  std::map<std::string, Figures> rows;

  Collector() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_Defaults : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      Figures& f = rows[run.run_name.function_name];  // the name as registered
      f.error = run.error_occurred ? run.error_message : "";
      f.ns = run.GetAdjustedRealTime() * 1e9 / benchmark::GetTimeUnitMultiplier(run.time_unit);
      const auto roof = run.counters.find("roof_GBps");
      if (roof != run.counters.end()) f.roof_gbps = roof->second.value;
    }
  }
};

template <class Call>
const Impl<Call>& optimized_impl() {
  const std::string name = std::string(family_name(Call::kFamily)) + "/optimized";
  for (const Impl<Call>& impl : implementations<Call>())
    if (impl.name == name) return impl;
  throw std::logic_error("the registry has no " + name);
}

// The plugin's output on case `c` against the fp64 reference where the bench runs it (cases of at
// most 64 MiB), else against posenc's optimized output with the two bounds added. Returns "" when
// it holds, else what went wrong; `against` says what it was checked against.
template <class Call>
std::string check_output(const Impl<Call>& impl, const Case<Call>& c, int threads,
                         std::string& against) {
  const Impl<Call>& oracle = c.reference ? reference_impl<Call>() : optimized_impl<Call>();
  Bound bound = impl.bound;
  if (!c.reference) {
    auto sum = [&](DType d) { return impl.bound.of(d) + oracle.bound.of(d); };
    bound = Bound(sum(DType::f32), sum(DType::bf16), sum(DType::f16));
  }
  against = oracle.name + (c.reference ? "" : fmt::format(" (bound {:g})", bound.f32));
  std::vector<std::unique_ptr<Buffers>> held;  // bench buffers, kept until compared
  const harness::Problem<Call> problem{c.label, [&](harness::Arena&) {
                                         held.push_back(std::make_unique<Buffers>(true));
                                         Call call = c.build(*held.back());
                                         call.threads = threads;
                                         return call;
                                       }};
  harness::Arena unused;
  const Call expected = problem.build(unused), got = problem.build(unused);
  try {
    oracle.run(expected);
  } catch (const std::exception& e) {
    return "not timed: " + oracle.name + " threw: " + e.what();
  }
  try {
    impl.run(got);
  } catch (const std::exception& e) {
    return std::string("failed, not timed: ") + e.what();
  }
  const harness::Comparison cmp = harness::compare_outputs(problem, expected, got, bound);
  return cmp.ok ? "" : "wrong output, not timed: " + cmp.describe();
}

// R for the repeated row: calls whose time is about 8 times the isolation's own (whose noise then
// adds little per call), within a quarter of the call timeout, at most 4096.
template <class Call>
uint32_t calls_per_request(const plugin::Repeated<Call>& repeat, Call call, int threads,
                           double timeout) {
  call.threads = threads;
  auto seconds = [&](uint32_t calls) {  // the best of 3, after a warm-up: other processes run here
    repeat(call, calls);
    double best = INFINITY;
    for (int i = 0; i < 3; ++i) {
      const auto start = std::chrono::steady_clock::now();
      repeat(call, calls);
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
  };
  const double way = seconds(0);
  double kernel = std::max(seconds(1) - way, way / 512);
  // 8 calls in a row sharpen the estimate, where they fit well within the call timeout.
  if (8 * kernel + way < timeout / 4) kernel = std::max((seconds(8) - way) / 8, way / 512);
  kernel = std::max(kernel, 1e-7);
  return static_cast<uint32_t>(std::clamp(std::min(8 * way, timeout / 4) / kernel, 1.0, 4096.0));
}

// The rows of `plugin`'s kernels of Call on case `c`.
template <class Call>
void add_rows(const plugin::Plugin& plugin, const std::vector<int>& thread_counts,
              const std::regex& filter, Plan& plan, const std::shared_ptr<const Case<Call>>& c) {
  const auto& kernels = plugin.kernels<Call>();
  const auto& repeated = plugin.repeated<Call>();
  Buffers unwritten(false);
  const Call probe = c->build(unwritten);
  const Impl<Call>& posenc = optimized_impl<Call>();
  for (int threads : thread_counts) {
    const std::string tail = "/" + c->label + "/threads:" + std::to_string(threads);
    for (size_t k = 0; k < kernels.size(); ++k) {
      const Impl<Call>& impl = kernels[k];
      if (!std::regex_search(impl.name + tail, filter)) continue;
      if (!impl.threaded && threads != 1) continue;
      if (const uint64_t missing = harness::missing_variants(probe, impl.variants)) {
        plan.unsupported.push_back(fmt::format("{} on {}: needs {}", impl.name, c->label,
                                               harness::variant_names(Call::kFamily, missing)));
        continue;
      }
      Line line{.kernel = impl.name,
                .label = c->label,
                .threads = threads,
                .bytes = c->bytes,
                .plugin = "plugin/" + impl.name + tail,
                .isolation = "isolation/" + impl.name + tail,
                .repeated = "repeated/" + impl.name + tail,
                .posenc = "posenc/" + posenc.name + tail,
                .posenc_impl = posenc.name};
      if (plan.posenc_rows.insert(line.posenc).second) {
        benchmark::RegisterBenchmark(line.posenc.c_str(), [c, &posenc, threads](auto& state) {
          run_case(state, *c, posenc, threads);
        })->UseRealTime();
      }
      benchmark::RegisterBenchmark(line.plugin.c_str(), [c, &impl, threads, &plan,
                                                         name = line.plugin](auto& state) {
        // Once per row, before it is timed: a wrong kernel is not timed at all.
        auto [it, first] = plan.verdicts.try_emplace(name);
        if (first) it->second = check_output(impl, *c, threads, plan.checked[name]);
        if (!it->second.empty()) return state.SkipWithError(it->second.c_str());
        run_case(state, *c, impl, threads);
      })->UseRealTime();
      // The isolation row (0 calls) and the repeated one (R calls): the same call, made in a row.
      for (bool isolation : {true, false}) {
        const std::string& row = isolation ? line.isolation : line.repeated;
        benchmark::RegisterBenchmark(row.c_str(), [=, &impl, &plan, repeat = repeated[k],
                                                   name = line.plugin](auto& state) {
          if (!plan.verdicts[name].empty())
            return state.SkipWithError("not run: the kernel's output was wrong");
          auto [calls, first] = plan.calls.try_emplace(name, 1);
          try {
            if (first)
              calls->second =
                  calls_per_request(repeat, case_slot().get(*c), threads, plan.call_timeout);
          } catch (const std::exception& e) {  // a kernel can fail on any call
            note_failure();
            return state.SkipWithError((std::string("threw: ") + e.what()).c_str());
          }
          const uint32_t n = isolation ? 0 : calls->second;
          Impl<Call> way = impl;
          way.name = (isolation ? "isolation/" : "repeated/") + impl.name;
          way.run = [repeat, n](const Call& call) { repeat(call, n); };
          run_case(state, *c, way, threads);
          if (!isolation) state.SetLabel(fmt::format("{} calls per iteration", n));
        })->UseRealTime();
      }
      plan.lines.push_back(std::move(line));
    }
  }
}

// Three significant digits, without an exponent.
std::string micros(double ns) {
  return ns < 1e6 ? fmt::format("{:.3g}", ns / 1e3) : fmt::format("{:.0f}", ns / 1e3);
}

// A kernel's output lines (its crash report's) on the table's one line.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  in >> one >> five >> fifteen;
  return fmt::format("{} {} {}", one, five, fifteen);
}

// The table, one line per plugin kernel, case and thread count; returns how many were wrong or
// failed.
int print_table(const Plan& plan, const Collector& collector, const BenchOptions& o,
                const std::string& path) {
  auto figures = [&](const std::string& row) {
    const auto it = collector.rows.find(row);
    return it == collector.rows.end() ? Collector::Figures{.error = "not run"} : it->second;
  };
  auto roof_pct = [](double bytes, double ns, double roof_gbps) {
    return ns > 0 && roof_gbps > 0 ? fmt::format("{:.1f}", 100 * bytes / ns / roof_gbps) : "-";
  };
  constexpr const char* kRow =
      "{:<24} {:<32} {:>3} {:>10} {:>10} {:>10} {:>5} {:>10} {:>8} {:>7} {:>7}  {}\n";
  fmt::print("\n");
  fmt::print(kRow, "kernel", "case", "thr", "plugin µs", "isol. µs", "kernel µs", "R", "posenc µs",
             "÷ posenc", "roof %", "posenc%", "output");
  int bad = 0;
  std::string json;
  for (const Line& line : plan.lines) {
    const auto plugin = figures(line.plugin), isolation = figures(line.isolation),
               repeated = figures(line.repeated), posenc = figures(line.posenc);
    const auto calls = plan.calls.find(line.plugin);
    const uint32_t r = calls == plan.calls.end() ? 0 : calls->second;
    const bool ran = plugin.error.empty() && isolation.error.empty() && repeated.error.empty() && r;
    const double kernel = ran ? (repeated.ns - isolation.ns) / r : NAN;
    const auto checked = plan.checked.find(line.plugin);
    std::string output = !plugin.error.empty()           ? one_line(plugin.error)
                         : checked == plan.checked.end() ? "not checked"
                                                         : "ok against " + checked->second;
    bad += !plugin.error.empty() && !plugin.error.starts_with("skipped:");  // the time budget
    if (!plugin.error.empty() || !ran) {
      fmt::print(kRow, line.kernel, line.label, line.threads, "-", "-", "-", "-",
                 posenc.error.empty() ? micros(posenc.ns) : "-", "-", "-", "-",
                 !plugin.error.empty()      ? output
                 : !isolation.error.empty() ? "isolation row: " + isolation.error
                                            : "repeated row: " + repeated.error);
    } else {
      fmt::print(kRow, line.kernel, line.label, line.threads, micros(plugin.ns),
                 micros(isolation.ns), kernel > 0 ? micros(kernel) : "≤ 0", r, micros(posenc.ns),
                 kernel > 0 && posenc.ns > 0 ? fmt::format("{:.2f}", kernel / posenc.ns) : "-",
                 roof_pct(line.bytes, kernel, plugin.roof_gbps),
                 roof_pct(line.bytes, posenc.ns, posenc.roof_gbps), output);
    }
    using harness::json_number, harness::json_string;
    auto ns = [&](const Collector::Figures& f) { return f.error.empty() ? f.ns : NAN; };
    json += fmt::format(
        "{}\n    {{\"kernel\": {}, \"case\": {}, \"threads\": {}, \"bytes\": {}, "
        "\"plugin_ns\": {}, \"isolation_ns\": {}, \"kernel_ns\": {}, \"calls\": {}, "
        "\"posenc_ns\": {}, "
        "\"posenc_impl\": {}, \"roof_GBps\": {}, \"output\": {}}}",
        json.empty() ? "" : ",", json_string(line.kernel), json_string(line.label), line.threads,
        json_number(line.bytes), json_number(ns(plugin)), json_number(ns(isolation)),
        json_number(kernel), r, json_number(ns(posenc)), json_string(line.posenc_impl),
        json_number(plugin.roof_gbps), json_string(output));
  }
  fmt::print(
      "\nplugin: one call of its kernel as `posenc validate --kernel` makes it, through its child;"
      " isol.: the same call with the kernel not called (the tensors mirrored into shared memory "
      "and the changed bytes copied back, the call's pages opened and closed in the child, one "
      "socket round trip); kernel = (one way with R calls in a row − isol.) / R, R chosen so the "
      "calls take about 8 times isol.; ÷ posenc = kernel µs over posenc/<family>/optimized's on "
      "the same "
      "buffers; roof % = bytes moved per second over the scale roof at the same bytes and "
      "threads, measured in this run. Outputs were checked once per row before timing; a wrong "
      "one is not timed.\n");
  for (const std::string& u : plan.unsupported) fmt::print("not run: {}\n", u);
  if (!o.out.empty()) {
    std::ofstream file(o.out);
    file << fmt::format(
        "{{\n  \"plugin\": {}, \"cpu\": {}, \"load_average\": {}, \"repetitions\": {}, "
        "\"min_time\": {},\n  \"rows\": [{}\n  ]\n}}\n",
        harness::json_string(path), harness::json_string(cpu_name()),
        harness::json_string(load_average()), o.repetitions, o.min_time, json);
    if (!file) {
      fmt::print(stderr, "posenc bench: cannot write --out {}\n", o.out);
      return -1;
    }
  }
  return bad;
}

}  // namespace

int bench_kernels(const BenchOptions& o) {
  std::regex filter;
  try {
    filter = std::regex(o.filter);
  } catch (const std::regex_error& e) {
    fmt::print(stderr, "posenc bench: --filter {}: not a regular expression: {}\n", o.filter,
               e.what());
    return 2;
  }
  bool family_found = o.family.empty();
  std::string families;
  for_each_family([&](auto tag) {
    const std::string name = family_name(decltype(tag)::type::kFamily);
    families += (families.empty() ? "" : ", ") + name;
    family_found |= name == o.family;
  });
  if (!family_found) {
    fmt::print(stderr, "posenc bench: --family {}: not a family ({})\n", o.family, families);
    return 2;
  }
  if (!o.out.empty()) {  // fails now, not after the run
    const bool existed = std::filesystem::exists(o.out);
    if (!std::ofstream(o.out, std::ios::app)) {
      fmt::print(stderr, "posenc bench: --out {}: cannot write it\n", o.out);
      return 2;
    }
    if (!existed) std::filesystem::remove(o.out);
  }
  plugin::Options load_options;
  load_options.timeout = std::chrono::duration<double>(o.call_timeout);
  load_options.memory_limit = o.memory_limit
                                  ? static_cast<size_t>(*o.memory_limit * double(size_t{1} << 30))
                                  : plugin::default_memory_limit();
  std::optional<plugin::Plugin> plugin;
  try {
    plugin = plugin::load(o.kernel, load_options);
  } catch (const plugin::LoadError& e) {
    fmt::print(stderr, "posenc bench: --kernel {}: {}\n", o.kernel, e.what());
    return 2;
  }

  set_smoke(o.smoke);
  std::vector<int> thread_counts(std::begin(kThreadCounts), std::end(kThreadCounts));
  if (o.threads) thread_counts = {*o.threads};
  Plan plan;
  plan.call_timeout = o.call_timeout;
  std::vector<std::function<void()>> rows;  // added once bench/'s own rows are cleared
  std::string kernels;                      // every kernel the library has, for the messages
  for_each_family([&](auto tag) {
    using Call = typename decltype(tag)::type;
    for (const auto& impl : plugin->kernels<Call>())
      kernels += (kernels.empty() ? "" : ", ") + impl.name;
    const bool chosen = o.family.empty() || o.family == family_name(Call::kFamily);
    case_sink<Call>() = [&, chosen](std::shared_ptr<const Case<Call>> c) {
      if (chosen && !plugin->kernels<Call>().empty())
        rows.push_back([&, c] { add_rows<Call>(*plugin, thread_counts, filter, plan, c); });
    };
  });
  if (kernels.empty()) {
    fmt::print(stderr, "posenc bench: --kernel {}: the library has no kernels\n", o.kernel);
    return 2;
  }
  register_families();  // the cases arrive at the sinks; the few rows bench/ adds itself go
  benchmark::ClearRegisteredBenchmarks();
  if (rows.empty()) {
    fmt::print(stderr, "posenc bench: --family {}: {} has no kernel of that family (it has {})\n",
               o.family, o.kernel, kernels);
    return 2;
  }
  for (const auto& add : rows) add();
  if (plan.lines.empty()) {
    for (const std::string& u : plan.unsupported) fmt::print(stderr, "not run: {}\n", u);
    std::string asked = o.filter.empty() ? "" : "--filter " + o.filter;
    if (o.threads) asked += (asked.empty() ? "" : " ") + fmt::format("--threads {}", *o.threads);
    fmt::print(stderr, "posenc bench: {}: matches no case its kernels support ({}){}\n",
               asked.empty() ? "every case" : asked, kernels,
               o.threads && *o.threads != 1
                   ? "; a kernel not flagged POSENC_KERNEL_THREADED runs at 1 thread only"
                   : "");
    return 2;
  }

  fmt::print(
      "posenc bench: {} ({} row{}), CPU {}, load average {}; min time {:g} s per row, {} "
      "repetition{}\n",
      plugin->path(), plan.lines.size(), plan.lines.size() == 1 ? "" : "s", cpu_name(),
      load_average(), o.min_time, o.repetitions, o.repetitions == 1 ? "" : "s (medians)");
  std::vector<std::string> args = {"posenc bench",
                                   fmt::format("--benchmark_min_time={}", o.min_time),
                                   fmt::format("--benchmark_repetitions={}", o.repetitions)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();
  const int bad = print_table(plan, collector, o, plugin->path());
  if (bad < 0) return 2;
  return bad > 0 ? 1 : 0;
}

}  // namespace posenc::tools
