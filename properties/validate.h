// Validation as data: every property of a family over a list of implementations (the registry's,
// the self-test's broken ones, or a plugin's), one report per implementation. `posenc validate`
// prints these; a caller that isolates kernels in a child process can run the same function there
// and ship the reports back.
#pragma once

#include <string>
#include <vector>

#include "properties/property.h"

namespace posenc::harness {

struct ImplReport {
  std::string family, impl;
  std::vector<PropertyResult> results;  // one per property run, in the family's order

  int count(PropertyResult::Status status) const;
  int64_t cases() const;  // summed over properties
  // The result whose worst error came closest to its bound (bound > 0), or null.
  const PropertyResult* tightest() const;
  bool failed() const { return count(PropertyResult::Status::failed) > 0; }
  // "pass", "FAIL", or "skipped: <why>" when no property could run.
  std::string verdict() const;
};

struct ValidateOptions {
  RunOptions run;
  std::string property;  // only this property: "rope.pair_norm" or "pair_norm"
};

template <class Call>
std::vector<ImplReport> validate(const std::vector<const Impl<Call>*>& impls,
                                 const ValidateOptions& options) {
  std::vector<ImplReport> reports;
  for (const auto* impl : impls) reports.push_back({family_name(Call::kFamily), impl->name, {}});
  const auto replayed = options.run.replayed();
  for (const Property<Call>& property : properties<Call>()) {
    const std::string short_name = property.name.substr(property.name.find('.') + 1);
    if (!options.property.empty() && options.property != property.name &&
        options.property != short_name)
      continue;
    if (!options.run.reproduce.empty() &&
        std::find(replayed.begin(), replayed.end(), property.name) == replayed.end())
      continue;
    auto results = check(property, impls, options.run);
    for (size_t i = 0; i < impls.size(); ++i) reports[i].results.push_back(std::move(results[i]));
  }
  return reports;
}

// Per-property lines for one implementation.
std::string format_properties(const ImplReport& report);
// One row per implementation: family, implementation, properties passed/failed/skipped, cases,
// worst error against its bound, verdict.
std::string format_summary(const std::vector<ImplReport>& reports);

}  // namespace posenc::harness
