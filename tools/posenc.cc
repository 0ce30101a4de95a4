// `posenc`: the command-line face of the harness. `posenc validate` runs every property of every
// family over the registered implementations (or the self-test's broken ones) and prints, per
// implementation, each property's cases, worst error against its bound and verdict, then a summary
// with one row per implementation. Exit status: 0 all passed, 1 a property failed, 2 usage error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "properties/selftest.h"
#include "properties/validate.h"

namespace {

using namespace posenc;
using namespace posenc::harness;

struct Options {
  std::string family, impl, property, reproduce;
  std::optional<uint64_t> seed;
  std::optional<int> cases;
  bool selftest = false;
  std::string command;  // how this binary was invoked, for replay lines
};

template <class Call>
std::vector<Impl<Call>> candidates(bool selftest) {
  if (!selftest) return implementations<Call>();
  std::vector<Impl<Call>> impls;
  for (const auto& b : broken_implementations<Call>()) impls.push_back(b.impl);
  return impls;
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
  fmt::print("posenc validate: {} profile, seed {}, {} cases per property{}\n\n",
             options.run.profile, options.run.seed, options.run.cases,
             o.reproduce.empty() ? "" : ", replaying one case");

  std::vector<ImplReport> reports;
  bool family_found = o.family.empty();
  for_each_family([&](auto tag) {
    using Call = typename decltype(tag)::type;
    if (!o.family.empty() && o.family != family_name(Call::kFamily)) return;
    family_found = true;
    const auto all = candidates<Call>(o.selftest);
    std::vector<const Impl<Call>*> impls;
    for (const auto& impl : all)
      if (o.impl.empty() || impl.name == o.impl) impls.push_back(&impl);
    if (impls.empty()) return;
    for (ImplReport& r : harness::validate(impls, options)) {
      fmt::print("{}\n", format_properties(r));
      std::fflush(stdout);
      reports.push_back(std::move(r));
    }
  });
  if (!family_found) {
    fmt::print(stderr, "posenc validate: unknown family '{}'\n", o.family);
    return 2;
  }
  if (reports.empty()) {
    fmt::print(stderr, "posenc validate: no implementation named '{}'{}\n", o.impl,
               o.selftest ? " among the self-test's broken kernels" : "");
    return 2;
  }
  int failed = 0;
  for (const ImplReport& r : reports) {
    for (const PropertyResult& p : r.results) {
      if (!p.failed()) continue;
      const std::string replay = fmt::format("{} validate{} --impl {} --reproduce '{}'", o.command,
                                             o.selftest ? " --selftest" : "", p.impl, p.reproduce);
      fmt::print("{}\n\n", failure_report(p, replay));
    }
    failed += r.failed();
  }
  fmt::print("{}{} implementations, {} failed\n", format_summary(reports), reports.size(), failed);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"posenc: positional-encoding kernels, their oracle and their harness"};
  app.require_subcommand(1);
  auto* cmd = app.add_subcommand("validate", "check implementations against every property");
  Options o;
  o.command = argv[0];
  cmd->add_option("--family", o.family, "only this family (e.g. rope)");
  cmd->add_option("--impl", o.impl, "only this implementation (e.g. rope/reference)");
  cmd->add_option("--property", o.property, "only this property (e.g. differential)");
  cmd->add_option("--seed", o.seed, "RapidCheck seed (default: the CI seed, or POSENC_PROFILE's)");
  cmd->add_option("--cases", o.cases, "cases per property (default 200; nightly profile 4000)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--reproduce", o.reproduce, "replay the one failing case a report printed");
  cmd->add_flag("--selftest", o.selftest,
                "validate the harness's own broken kernels instead (each must fail)");
  int status = 0;
  cmd->callback([&] { status = validate(o); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return status;
}
