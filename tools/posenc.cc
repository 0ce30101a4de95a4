// `posenc`: the command-line face of the harness. `posenc validate` runs every property of every
// family over the registered implementations, the self-test's broken ones, or the kernels of
// plugin libraries (--kernel lib.so, each call isolated in a child process), and prints, per
// implementation, each property's cases, worst error against its bound and verdict, then a summary
// with one row per implementation. Exit status: 0 all passed, 1 a property failed, 2 usage or load
// error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/hf_config.h"
#include "plugin/loader.h"
#include "posenc/error.h"
#include "properties/report.h"
#include "properties/selftest.h"
#include "properties/validate.h"
#include "reference/reference.h"

namespace {

using namespace posenc;
using namespace posenc::harness;

struct Options {
  std::vector<std::string> kernels;  // plugin libraries
  std::string family, impl, property, reproduce, json, junit, html;
  std::optional<uint64_t> seed;
  std::optional<int> cases;
  std::optional<double> time_budget;  // seconds
  double call_timeout = 10;           // seconds, per plugin kernel call
  bool selftest = false;
  std::string command;  // how this binary was invoked, for replay lines
};

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

int validate(const Options& o) {
  ValidateOptions options;
  options.run = RunOptions::from_environment();
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
  options.error_by_position = !o.html.empty() || !o.json.empty();

  if (o.selftest && !o.kernels.empty()) {
    fmt::print(stderr, "posenc validate: --selftest and --kernel exclude each other\n");
    return 2;
  }
  std::vector<Source> sources;
  if (o.kernels.empty()) sources.push_back({});
  for (const std::string& path : o.kernels) {
    try {
      plugin::Options load_options;
      load_options.timeout = std::chrono::duration<double>(o.call_timeout);
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
  fmt::print("posenc validate: {} profile, seed {}, {} cases per property{}{}\n\n",
             options.run.profile, options.run.seed, options.run.cases,
             o.time_budget ? fmt::format(", time budget {:g} s", *o.time_budget) : "",
             o.reproduce.empty() ? "" : ", replaying one case");

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
      const std::string where = r.source.empty() ? "" : " --kernel " + shell_word(r.source);
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
  if (o.time_budget && cut_short(reports))
    fmt::print("the time budget of {:g} s cut the run short: {}\n", *o.time_budget,
               cut_summary(reports));

  const RunInfo info{options.run.profile, options.run.seed, options.run.cases, o.time_budget,
                     seconds};
  for (auto [path, write] : {std::pair{o.json, &write_json}, std::pair{o.junit, &write_junit},
                             std::pair{o.html, &write_html}}) {
    if (path.empty()) continue;
    if (std::string error = write(path, reports, info); !error.empty()) {
      fmt::print(stderr, "posenc validate: cannot write {}: {}\n", path, error);
      return 2;
    }
  }
  return failed ? 1 : 0;
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
  cmd->add_option("--family", o.family, "only this family (e.g. rope)");
  cmd->add_option("--impl", o.impl, "only this implementation (e.g. rope/reference)");
  cmd->add_option("--property", o.property, "only this property (e.g. differential)");
  cmd->add_option("--seed", o.seed, "RapidCheck seed (default: the CI seed, or POSENC_PROFILE's)");
  cmd->add_option("--cases", o.cases, "cases per property (default 200; nightly profile 4000)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--time-budget", o.time_budget,
                  "stop generating new cases after this many seconds (the report says what was "
                  "cut short)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--call-timeout", o.call_timeout,
                  "a plugin kernel call still running after this many seconds has hung (default "
                  "10)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--reproduce", o.reproduce, "replay the one failing case a report printed");
  cmd->add_option("--json", o.json, "also write the report as JSON to this file");
  cmd->add_option("--junit", o.junit, "also write the report as JUnit XML to this file");
  cmd->add_option("--html", o.html,
                  "also write an HTML page with worst error against position charts");
  cmd->add_flag("--selftest", o.selftest,
                "validate the harness's own broken kernels instead (each must fail)");
  int status = 0;
  cmd->callback([&] { status = validate(o); });

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
  }
  return status;
}
