// `posenc`: the command-line face of the harness. `posenc validate` checks every registered
// implementation against the reference and prints one row per implementation.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "properties/harness.h"

namespace {

using namespace posenc;
using namespace posenc::harness;

struct Row {
  std::string family, impl, verdict;
  int64_t cases = 0;
  double worst = 0, bound = 0;
  std::vector<std::string> failures;
};

template <class Call>
void validate_family(const std::string& impl_filter, std::vector<Row>& rows) {
  const auto problems = smoke_problems<Call>();
  for (const Impl<Call>& impl : implementations<Call>()) {
    if (!impl_filter.empty() && impl.name != impl_filter) continue;
    Row row{family_name(Call::kFamily), impl.name, "pass"};
    row.bound = impl.bound;
    if (std::string why = impl.unavailable_reason(); !why.empty()) {
      row.verdict = "skipped: " + why;
      rows.push_back(row);
      continue;
    }
    for (const auto& problem : problems) {
      Arena probe;
      if (!supports(impl, problem.build(probe))) continue;
      const Outcome outcome = differential(impl, problem);
      ++row.cases;
      row.worst = std::max(row.worst, outcome.comparison.worst);
      if (!outcome.ok) row.failures.push_back(problem.label + ": " + outcome.failure);
    }
    if (!row.failures.empty()) row.verdict = "FAIL";
    if (row.cases == 0) row.verdict = "FAIL: no case ran";
    rows.push_back(row);
  }
}

int validate(const std::string& family, const std::string& impl) {
  std::vector<Row> rows;
  bool family_found = family.empty();
  for_each_family([&](auto tag) {
    using Call = typename decltype(tag)::type;
    if (!family.empty() && family != family_name(Call::kFamily)) return;
    family_found = true;
    validate_family<Call>(impl, rows);
  });
  if (!family_found) {
    fmt::print(stderr, "posenc validate: unknown family '{}'\n", family);
    return 2;
  }
  if (rows.empty()) {
    fmt::print(stderr, "posenc validate: no implementation named '{}'\n", impl);
    return 2;
  }
  fmt::print("{:<18} {:<32} {:>6} {:>14}  {}\n", "family", "implementation", "cases",
             "worst / bound", "verdict");
  int failed = 0;
  for (const Row& r : rows) {
    fmt::print("{:<18} {:<32} {:>6} {:>6.3g} / {:<5g}  {}\n", r.family, r.impl, r.cases, r.worst,
               r.bound, r.verdict);
    for (const auto& f : r.failures) fmt::print("    {}\n", f);
    failed += r.verdict != "pass" && r.verdict.rfind("skipped", 0) != 0;
  }
  fmt::print("{} implementations, {} failed\n", rows.size(), failed);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"posenc: positional-encoding kernels, their oracle and their harness"};
  app.require_subcommand(1);
  auto* cmd = app.add_subcommand("validate", "check implementations against the reference");
  std::string family, impl;
  cmd->add_option("--family", family, "only this family (e.g. rope)");
  cmd->add_option("--impl", impl, "only this implementation (e.g. rope/reference)");
  int status = 0;
  cmd->callback([&] { status = validate(family, impl); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return status;
}
