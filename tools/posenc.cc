// `posenc`: the command-line face of the harness. `posenc validate` runs every property of every
// family over the registered implementations, the self-test's broken ones, or the kernels of
// plugin libraries (--kernel lib.so, each call isolated in a child process), and prints, per
// implementation, each property's cases, worst error against its bound and verdict, then a summary
// with one row per implementation. Exit status: 0 all passed, 1 a property failed, 2 usage or load
// error, 3 stopped early (the time budget, SIGINT or SIGTERM) with nothing failed.
// `posenc validate --config config.json [--layer N]` runs the rope families' properties at one
// model's rope parameters (PinnedRope in properties/property.h); `posenc config` prints them.
// `posenc bench --kernel lib.so` times a plugin's kernels beside posenc's (tools/bench_kernel.h).
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "config/hf_config.h"
#include "plugin/isolate.h"
#include "plugin/loader.h"
#include "posenc/error.h"
#include "properties/report.h"
#include "properties/selftest.h"
#include "properties/validate.h"
#include "reference/reference.h"
#include "tools/bench_kernel.h"

namespace {

using namespace posenc;
using namespace posenc::harness;

struct Options {
  std::vector<std::string> kernels;  // plugin libraries
  std::string config;                // --config: pin the rope families to this model's parameters
  std::optional<int64_t> layer;      // --layer, with --config
  std::string family, impl, property, reproduce, json, junit, html;
  // Numbers as typed, parsed strictly by parse_numbers().
  std::string seed_text, cases_text, time_budget_text, call_timeout_text, memory_limit_text;
  std::optional<uint64_t> seed;
  std::optional<int> cases;
  std::optional<double> time_budget;   // seconds
  double call_timeout = 10;            // seconds, per plugin kernel call
  std::optional<double> memory_limit;  // GiB per plugin child
  bool selftest = false;
  std::string command;  // how this binary was invoked, for replay lines
};

// A bad flag or environment variable: exit status 2 with this message.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Without --time-budget, a plugin's run in the CI profile stops generating cases after 5 minutes
// (the nightly profile's after an hour) and reports what it cut short; built-ins have no limit.
constexpr double kPluginTimeBudget = 300, kNightlyPluginTimeBudget = 3600;

uint64_t parse_integer(const std::string& flag, const std::string& text, uint64_t lo, uint64_t hi) {
  const auto bad = [&] {
    return UsageError(
        fmt::format("{} {}: expected a whole number from {} to {}", flag, text, lo, hi));
  };
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) throw bad();
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || n < lo || n > hi) throw bad();
  return n;
}

double parse_seconds(const std::string& flag, const std::string& text, double hi,
                     const char* unit = "seconds") {
  const auto bad = [&] {
    return UsageError(
        fmt::format("{} {}: expected {} greater than 0 and at most {:g}", flag, text, unit, hi));
  };
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x) || x <= 0 || x > hi)
    throw bad();
  return x;
}

void parse_numbers(Options& o) {
  if (!o.seed_text.empty())
    o.seed = parse_integer("--seed", o.seed_text, 0, std::numeric_limits<uint64_t>::max());
  if (!o.cases_text.empty())
    o.cases = static_cast<int>(parse_integer("--cases", o.cases_text, 1, 100000000));
  if (!o.time_budget_text.empty())
    o.time_budget = parse_seconds("--time-budget", o.time_budget_text, 7 * 86400);
  if (!o.call_timeout_text.empty())
    o.call_timeout = parse_seconds("--call-timeout", o.call_timeout_text, 3600);
  if (!o.memory_limit_text.empty())
    o.memory_limit = parse_seconds("--memory-limit", o.memory_limit_text, 4096, "GiB");
}

// Every POSENC_* variable this program or its tests read, checked before anything runs; any
// other POSENC_* variable is a typo.
void check_environment() {
  auto value = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  if (auto v = value("POSENC_PROFILE"); v && !v->empty() && *v != "ci" && *v != "nightly")
    throw UsageError("POSENC_PROFILE=" + *v + ": expected ci or nightly");
  if (auto v = value("POSENC_NUM_THREADS"); v && !v->empty()) {
    try {
      resolve_threads(0);
    } catch (const std::exception&) {
      throw UsageError("POSENC_NUM_THREADS=" + *v + ": expected a whole number from 1 to 1024");
    }
  }
  if (auto v = value("POSENC_FUZZ_BROKEN"); v && !v->empty() && *v != "0" && *v != "1")
    throw UsageError("POSENC_FUZZ_BROKEN=" + *v + ": expected 0 or 1");
  if (auto v = value("POSENC_BENCH_BUDGET"); v && !v->empty())
    parse_seconds("POSENC_BENCH_BUDGET", *v, 86400);
  if (auto v = value("RC_PARAMS"); v && !v->empty()) {  // the values are RapidCheck's to parse
    std::istringstream words(*v);
    for (std::string word; words >> word;) {
      const std::string key = word.substr(0, word.find('='));
      if (key != "seed" && key != "max_success" && key != "reproduce")
        throw UsageError("RC_PARAMS='" + *v + "': posenc validate reads only seed=, max_success= " +
                         "and reproduce=, not '" + word + "'");
    }
  }
  static const std::vector<std::string> known = {"POSENC_PROFILE",      "POSENC_NUM_THREADS",
                                                 "POSENC_FUZZ_BROKEN",  "POSENC_FUZZ_VERBOSE",
                                                 "POSENC_FUZZ_TARGETS", "POSENC_BENCH_BUDGET"};
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e, name = entry.substr(0, entry.find('='));
    if (!name.starts_with("POSENC_") || std::find(known.begin(), known.end(), name) != known.end())
      continue;
    std::string names;
    for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
    throw UsageError(name + " is not a variable posenc reads (it reads " + names + ")");
  }
}

// Fails now, not after the run, when a report could not be written to `path`.
void check_writable(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  const bool existed = access(path.c_str(), F_OK) == 0;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw UsageError(fmt::format("{} {}: cannot write it: {}", flag, path, std::strerror(errno)));
  close(fd);
  if (!existed) unlink(path.c_str());
}

// Overwritten only by something writing this process's memory from outside (a plugin through
// /proc/<pid>/mem): checked before the report is trusted.
constexpr char kCanary[] = "posenc validate canary: untouched";
char canary[sizeof kCanary];

void on_stop_signal(int) { harness::request_stop(); }

// The rope families a --config pins; the others have no rope parameters.
bool pinned_family(Family family) {
  return family == Family::rope_frequencies || family == Family::rope_cache ||
         family == Family::rope || family == Family::mrope;
}

// --config: the rope parameters of one layer of a Hugging Face config.json (config/hf_config.h),
// as the properties' pin. A bad config, an absent or unneeded layer, or an mrope_section that
// describes no mrope call is a posenc::Error naming the key.
PinnedRope pin_of(const std::string& path, std::optional<int64_t> layer) {
  const config::ModelRope model = config::read(path);
  const config::LayerRope& rope = model.layer(layer);
  PinnedRope pin{.head_dim = rope.head_dim,
                 .rotary_dim = rope.rotary_dim,
                 .layout = rope.layout,
                 .base = rope.base,
                 .scaling = rope.scaling,
                 .max_position = rope.max_position_embeddings};
  pin.label = path + (layer ? fmt::format(" layer {}", *layer) : std::string()) +
              (rope.layer_type.empty() ? std::string() : " (" + rope.layer_type + ")");
  require(rope.max_position_embeddings >= 0, "max_position_embeddings",
          static_cast<double>(rope.max_position_embeddings), "must be >= 1");
  if (!rope.mrope_section.empty()) {
    const std::string key = rope.source + ".mrope_section";
    std::string value;
    for (int64_t n : rope.mrope_section) value += (value.empty() ? "" : ", ") + std::to_string(n);
    require(rope.mrope_section.size() == 3, key, "[" + value + "]",
            "must have 3 entries: temporal, height, width");
    pin.mrope_section = {rope.mrope_section[0], rope.mrope_section[1], rope.mrope_section[2]};
    pin.mrope_convention =
        rope.mrope_interleaved ? MropeConvention::interleaved : MropeConvention::sectioned;
    // One token through MropeCall::validate: the section must describe an mrope call.
    std::vector<float> q(static_cast<size_t>(rope.head_dim));
    int64_t positions[3] = {0, 0, 0};
    MropeCall call{.rotary_dim = pin.rotary_dim,
                   .mrope_section = *pin.mrope_section,
                   .convention = pin.mrope_convention,
                   .layout = pin.layout,
                   .base = pin.base,
                   .scaling = pin.scaling};
    call.q = call.q_out = view(q.data(), DType::f32, {1, 1, rope.head_dim});
    call.positions = view(positions, DType::i64, {1, 3});
    try {
      call.validate();
    } catch (const Error& e) {
      throw Error(rope.source + "." + e.argument(), e.value(), e.requirement());
    }
  }
  return pin;
}

// Where implementations come from: the registry, the self-test, or one plugin library.
struct Source {
  std::string kernel;  // the library's path as given, or "" for built-ins
  std::optional<plugin::Plugin> plugin;

  template <class Call>
  std::vector<Impl<Call>> candidates(bool selftest) const {
    if (plugin) return plugin->kernels<Call>();
    if (!selftest) return implementations<Call>();
    std::vector<Impl<Call>> impls;
    for (const auto& b : broken_implementations<Call>()) impls.push_back(b.impl);
    return impls;
  }
};

// A string as one shell word.
std::string shell_word(const std::string& s) {
  if (s.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,") ==
      std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int validate(Options& o) {
  parse_numbers(o);
  check_environment();
  for (auto [flag, path] : {std::pair{"--json", o.json}, {"--junit", o.junit}, {"--html", o.html}})
    check_writable(flag, path);
  ValidateOptions options;
  try {
    options.run = RunOptions::from_environment();
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("RC_PARAMS='{}': {}", std::getenv("RC_PARAMS"), e.what()));
  }
  if (!o.time_budget && !o.kernels.empty())
    o.time_budget = options.run.profile == "nightly" ? kNightlyPluginTimeBudget : kPluginTimeBudget;
  std::memcpy(canary, kCanary, sizeof kCanary);
  struct sigaction stop {};
  stop.sa_handler = on_stop_signal;
  stop.sa_flags = SA_RESETHAND;  // a second signal ends the run at once
  sigaction(SIGINT, &stop, nullptr);
  sigaction(SIGTERM, &stop, nullptr);
  if (o.seed) options.run.seed = *o.seed;
  if (o.cases) options.run.cases = *o.cases;
  if (!o.reproduce.empty()) {
    options.run.reproduce = o.reproduce;
    if (options.run.replayed().empty()) {
      fmt::print(stderr, "posenc validate: --reproduce '{}' does not decode\n", o.reproduce);
      return 2;
    }
  }
  options.property = o.property;
  options.error_by_position = true;  // the text report prints the bands too

  if (o.selftest && !o.kernels.empty()) {
    fmt::print(stderr, "posenc validate: --selftest and --kernel exclude each other\n");
    return 2;
  }
  if (o.layer && o.config.empty()) throw UsageError("--layer needs --config");
  if (!o.config.empty()) {
    if (o.selftest) throw UsageError("--selftest and --config exclude each other");
    try {
      options.run.pinned = pin_of(o.config, o.layer);
    } catch (const Error& e) {
      fmt::print(stderr, "posenc validate --config {}: {}\n", o.config, e.what());
      return 2;
    }
    if (!o.family.empty()) {
      bool rope_family = false;
      for_each_family([&](auto tag) {
        using Call = typename decltype(tag)::type;
        rope_family |= o.family == family_name(Call::kFamily) && pinned_family(Call::kFamily);
      });
      if (!rope_family)
        throw UsageError("--family " + o.family +
                         ": --config pins the rope families only (rope_frequencies, rope_cache, "
                         "rope, mrope)");
    }
    // Its bands would be measured at generated parameters, not the model's.
    options.error_by_position = false;
  }
  std::vector<Source> sources;
  if (o.kernels.empty()) sources.push_back({});
  for (const std::string& path : o.kernels) {
    try {
      plugin::Options load_options;
      load_options.timeout = std::chrono::duration<double>(o.call_timeout);
      load_options.memory_limit =
          o.memory_limit ? static_cast<size_t>(*o.memory_limit * double(size_t{1} << 30))
                         : plugin::default_memory_limit();
      sources.push_back({path, plugin::load(path, load_options)});
    } catch (const plugin::LoadError& e) {
      fmt::print(stderr, "posenc validate: {}\n", e.what());
      return 2;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  if (o.time_budget)
    options.run.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>(*o.time_budget));
  fmt::print("posenc validate: {} profile, seed {}, {} cases per property{}{}\n",
             options.run.profile, options.run.seed, options.run.cases,
             o.time_budget ? fmt::format(", time budget {:g} s", *o.time_budget) : "",
             o.reproduce.empty() ? "" : ", replaying one case");
  if (options.run.pinned)
    fmt::print("rope parameters of {}: {}\n", options.run.pinned->label,
               options.run.pinned->describe());
  if (!o.kernels.empty()) {
    const std::string confinement = plugin::confinement();
    const size_t line = confinement.find('\n');
    fmt::print(
        "plugin sandbox: {}; memory limit {:.3g} GiB per child\n", confinement.substr(0, line),
        o.memory_limit.value_or(double(plugin::default_memory_limit()) / double(size_t{1} << 30)));
    if (line != std::string::npos) fmt::print("{}", confinement.substr(line + 1));
  }
  fmt::print("\n");

  // One job per family with implementations to validate, so that a time budget is shared
  // between families as harness::validate shares a family's between its properties.
  std::vector<ImplReport> reports;
  std::vector<std::function<void(const ValidateOptions&)>> jobs;
  bool family_found = o.family.empty();
  for (const Source& source : sources) {
    for_each_family([&](auto tag) {
      using Call = typename decltype(tag)::type;
      if (!o.family.empty() && o.family != family_name(Call::kFamily)) return;
      family_found = true;
      if (options.run.pinned && !pinned_family(Call::kFamily)) return;
      if (options.run.pinned && Call::kFamily == Family::mrope &&
          !options.run.pinned->mrope_section) {
        if (!source.candidates<Call>(false).empty())
          fmt::print("mrope: not run: the config has no mrope_section\n\n");
        return;
      }
      auto impls = std::make_shared<std::vector<Impl<Call>>>();
      for (auto& impl : source.candidates<Call>(o.selftest))
        if (o.impl.empty() || impl.name == o.impl) impls->push_back(std::move(impl));
      if (impls->empty()) return;
      jobs.push_back([&reports, impls, kernel = source.kernel](const ValidateOptions& share) {
        std::vector<const Impl<Call>*> pointers;
        for (const auto& impl : *impls) pointers.push_back(&impl);
        for (ImplReport& r : harness::validate(pointers, share)) {
          if (r.results.empty()) continue;  // --property names another family's property
          fmt::print("{}\n", format_properties(r));
          std::fflush(stdout);
          r.source = kernel;
          reports.push_back(std::move(r));
        }
      });
    });
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    ValidateOptions share = options;
    if (share.run.deadline) {
      const auto now = std::chrono::steady_clock::now();
      share.run.deadline = now + std::max(*share.run.deadline - now, decltype(now - now){}) /
                                     static_cast<int64_t>(jobs.size() - j);
    }
    jobs[j](share);
  }
  if (!family_found) {
    fmt::print(stderr, "posenc validate: unknown family '{}'\n", o.family);
    return 2;
  }
  if (reports.empty() && !o.property.empty()) {
    fmt::print(stderr, "posenc validate: no property named '{}'{}\n", o.property,
               o.family.empty() ? "" : " in family " + o.family);
    return 2;
  }
  if (reports.empty()) {
    fmt::print(stderr, "posenc validate: no implementation{}{}{}\n",
               o.impl.empty() ? "" : " named '" + o.impl + "'",
               o.family.empty() ? "" : " of family " + o.family,
               o.selftest          ? " among the self-test's broken kernels"
               : o.kernels.empty() ? ""
                                   : " in the plugin(s)");
    return 2;
  }
  int failed = 0;
  for (ImplReport& r : reports) {
    for (PropertyResult& p : r.results) {
      if (!p.failed()) continue;
      std::string where = r.source.empty() ? "" : " --kernel " + shell_word(r.source);
      if (!o.config.empty()) where += " --config " + shell_word(o.config);
      if (o.layer) where += fmt::format(" --layer {}", *o.layer);
      p.replay =
          fmt::format("{} validate{}{} --impl {} --reproduce '{}'", o.command,
                      o.selftest ? " --selftest" : "", where, shell_word(p.impl), p.reproduce);
      fmt::print("{}\n\n", failure_report(p, p.replay));
    }
    failed += r.failed();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}{} implementations, {} failed, {:.1f} s\n", format_summary(reports), reports.size(),
             failed, seconds);
  const bool stopped = harness::stop_requested(), cut = cut_short(reports) || stopped;
  if (stopped)
    fmt::print("a signal stopped the run: {}\n", cut_summary(reports));
  else if (o.time_budget && cut)
    fmt::print("the time budget of {:g} s cut the run short: {}\n", *o.time_budget,
               cut_summary(reports));
  if (std::memcmp(canary, kCanary, sizeof kCanary) != 0) {
    fmt::print(stderr,
               "posenc validate: this process's memory was written from outside during the run "
               "(its canary now reads '{}'): no report can be trusted\n",
               std::string(canary, strnlen(canary, sizeof canary)));
    return 2;
  }

  const RunInfo info{
      options.run.profile,
      options.run.seed,
      options.run.cases,
      o.time_budget,
      seconds,
      options.run.pinned ? options.run.pinned->label + ": " + options.run.pinned->describe() : ""};
  for (auto [path, write] : {std::pair{o.json, &write_json}, std::pair{o.junit, &write_junit},
                             std::pair{o.html, &write_html}}) {
    if (path.empty()) continue;
    if (std::string error = write(path, reports, info); !error.empty()) {
      fmt::print(stderr, "posenc validate: cannot write {}: {}\n", path, error);
      return 2;
    }
  }
  return failed ? 1 : cut ? 3 : 0;
}

struct ConfigOptions {
  std::string path;
  std::optional<int64_t> layer;
  int64_t seq_len = 0;
  bool json = false;
};

// `posenc config`: a Hugging Face config.json's rope as posenc's call parameters, with the
// reference's frequencies and attention factor. Exit status 2 names a bad or unused key.
int show_config(const ConfigOptions& o) {
  try {
    const config::ModelRope model = config::read(o.path, o.seq_len);
    const config::LayerRope& rope = model.layer(o.layer);
    const reference::RopeFrequencies r =
        reference::frequencies(rope.rotary_dim, rope.base, rope.scaling);
    const auto format = o.json ? config::format_json : config::format_text;
    fmt::print("{}", format(model, rope, o.layer, r.inv_freq, r.attention_factor));
    return 0;
  } catch (const Error& e) {
    fmt::print(stderr, "posenc config {}: {}\n", o.path, e.what());
    return 2;
  }
}

// `posenc bench --kernel`'s numbers as typed, parsed strictly.
struct BenchText {
  std::string threads, repetitions, min_time, call_timeout, memory_limit;
};

int bench(tools::BenchOptions& o, const BenchText& text) {
  try {
    if (!text.threads.empty())
      o.threads = static_cast<int>(parse_integer("--threads", text.threads, 1, 1024));
    if (!text.repetitions.empty())
      o.repetitions = static_cast<int>(parse_integer("--repetitions", text.repetitions, 1, 1000));
    if (!text.min_time.empty()) o.min_time = parse_seconds("--min-time", text.min_time, 3600);
    if (!text.call_timeout.empty())
      o.call_timeout = parse_seconds("--call-timeout", text.call_timeout, 3600);
    if (!text.memory_limit.empty())
      o.memory_limit = parse_seconds("--memory-limit", text.memory_limit, 4096, "GiB");
    check_environment();
  } catch (const UsageError& e) {
    fmt::print(stderr, "posenc bench: {}\n", e.what());
    return 2;
  }
  return tools::bench_kernels(o);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"posenc: positional-encoding kernels, their oracle and their harness"};
  app.require_subcommand(1);
  auto* cmd = app.add_subcommand("validate", "check implementations against every property");
  Options o;
  o.command = argv[0];
  cmd->add_option("--kernel", o.kernels,
                  "validate the kernels of this plugin library (posenc/plugin.h) instead of the "
                  "built-in ones; may be repeated");
  cmd->add_option("--config", o.config,
                  "run the rope families' properties at this Hugging Face config.json's rope "
                  "parameters (shapes, positions below its max_position_embeddings and values "
                  "still generated); properties that vary a parameter are skipped");
  cmd->add_option(
      "--layer", o.layer,
      "with --config: the rope of this layer (needed when layers differ, e.g. Gemma 3)");
  cmd->add_option("--family", o.family, "only this family (e.g. rope)");
  cmd->add_option("--impl", o.impl, "only this implementation (e.g. rope/reference)");
  cmd->add_option("--property", o.property, "only this property (e.g. differential)");
  cmd->add_option("--seed", o.seed_text,
                  "RapidCheck seed, 0 to 2^64-1 (default: the CI seed, or POSENC_PROFILE's)");
  cmd->add_option("--cases", o.cases_text,
                  "cases per property, 1 to 10^8 (default 200; nightly profile 4000)");
  cmd->add_option("--time-budget", o.time_budget_text,
                  "stop generating new cases after this many seconds, then report what was cut "
                  "short and exit 3 (default with --kernel: 300, nightly profile 3600; built-ins: "
                  "none)");
  cmd->add_option("--call-timeout", o.call_timeout_text,
                  "a plugin kernel call still running after this many seconds has hung (default "
                  "10, at most 3600)");
  cmd->add_option("--memory-limit", o.memory_limit_text,
                  "GiB of its own memory a plugin's child may use before it is killed (default: "
                  "a quarter of this machine's RAM)");
  cmd->add_option("--reproduce", o.reproduce, "replay the one failing case a report printed");
  cmd->add_option("--json", o.json, "also write the report as JSON to this file");
  cmd->add_option("--junit", o.junit, "also write the report as JUnit XML to this file");
  cmd->add_option("--html", o.html,
                  "also write an HTML page with worst error against position charts");
  cmd->add_flag("--selftest", o.selftest,
                "validate the harness's own broken kernels instead (each must fail)");
  int status = 0;
  cmd->callback([&] { status = validate(o); });

  auto* bench_cmd = app.add_subcommand(
      "bench",
      "time a plugin's kernels on posenc_bench's cases beside posenc's optimized ones and the "
      "memory roof, in one run");
  tools::BenchOptions bench_options;
  BenchText bench_text;
  bench_cmd->add_option("--kernel", bench_options.kernel, "the plugin library (posenc/plugin.h)")
      ->required();
  bench_cmd->add_option("--family", bench_options.family, "only this family (e.g. rope)");
  bench_cmd->add_option("--filter", bench_options.filter,
                        "only rows whose '<family>/<kernel>/<case>/threads:<n>' matches this "
                        "regular expression");
  bench_cmd->add_option("--threads", bench_text.threads,
                        "only this thread count (default 1 and 2)");
  bench_cmd->add_option("--repetitions", bench_text.repetitions,
                        "repeat each row, report medians (default 1)");
  bench_cmd->add_option("--min-time", bench_text.min_time,
                        "seconds each row runs for at least (default 0.5)");
  bench_cmd->add_flag("--smoke", bench_options.smoke, "posenc_bench's tiny shapes (as in CI)");
  bench_cmd->add_option("--call-timeout", bench_text.call_timeout,
                        "a plugin kernel call still running after this many seconds has hung "
                        "(default 10)");
  bench_cmd->add_option("--memory-limit", bench_text.memory_limit,
                        "GiB of its own memory the plugin's child may use (default: a quarter "
                        "of this machine's RAM)");
  bench_cmd->add_option("--out", bench_options.out, "also write the table as JSON to this file");
  bench_cmd->callback([&] { status = bench(bench_options, bench_text); });

  auto* config_cmd = app.add_subcommand(
      "config",
      "print a Hugging Face config.json's rope parameters, frequencies and attention factor");
  ConfigOptions config_options;
  config_cmd->add_option("config", config_options.path, "the model's config.json")->required();
  config_cmd->add_option("--layer", config_options.layer,
                         "the rope of this layer (needed when layers differ, e.g. Gemma 3)");
  config_cmd
      ->add_option("--seq-len", config_options.seq_len,
                   "sequence length for dynamic and longrope scalings (default 0: their values "
                   "at initialization)")
      ->check(CLI::NonNegativeNumber);
  config_cmd->add_flag("--json", config_options.json, "print one JSON object");
  config_cmd->callback([&] { status = show_config(config_options); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const UsageError& e) {
    fmt::print(stderr, "posenc validate: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // nothing leaves main as an abort
    fmt::print(stderr, "posenc validate: {}\n", e.what());
    return 2;
  }
  return status;
}
