// Validation as data: every property of a family over a list of implementations (the registry's,
// the self-test's broken ones, or a plugin's), one report per implementation. `posenc validate`
// prints these; a caller that isolates kernels in a child process can run the same function there
// and ship the reports back.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "posenc/properties/error_by_position.h"
#include "posenc/properties/property.h"

namespace posenc::harness {

struct ImplReport {
  std::string family, impl;
  std::string source;                   // the plugin library it came from; "" for built-ins
  double bound = 0;                     // the implementation's stated bound
  std::vector<PropertyResult> results;  // one per property run, in the family's order
  std::vector<PositionBand> bands;      // worst error against position, when measured
  Bound bounds;                         // the stated bound per dtype (`bound` is its f32 one)
  uint64_t variants = 0;                // the variants it declares
  int64_t max_position = 0;             // the largest position it claims, 0 for none

  int count(PropertyResult::Status status) const;
  int64_t cases() const;  // summed over properties
  // The result whose worst error came closest to its bound (bound > 0), or null.
  const PropertyResult* tightest() const;
  // The result the summary's worst / bound column shows: the differential's when it ran, else
  // tightest(), else a failed one (a crash or a hang has no error to show).
  const PropertyResult* headline() const;
  // The declared dtypes whose stated bound admits any output ("f32 bound 1e+07 ≥ 2^23 units, the
  // outputs' own magnitude"), "" when none does.
  std::string meaningless_bound() const;
  // A property failed, or the stated bound is meaningless.
  bool failed() const {
    return count(PropertyResult::Status::failed) > 0 || !meaningless_bound().empty();
  }
  // "pass", "FAIL", "FAIL: meaningless bound", or "skipped: <why>" when no property could run.
  std::string verdict() const;
};

struct ValidateOptions {
  RunOptions run;
  std::string property;  // only this property: "rope.pair_norm" or "pair_norm"
  // Also measure worst error against position (error_by_position.h) for the reports' tables and
  // charts.
  bool error_by_position = false;
};

// A kernel that rejected inputs inside what it declares gets one more result,
// "<family>.declared_inputs", failed with the first rejection shrunk (PropertyResult::rejection);
// the properties it rejected cases of say how many, and passed or failed on the rest.
void add_rejection(ImplReport& report);

// The properties of Call's family that `options` selects.
template <class Call>
std::vector<Property<Call>> selected_properties(const ValidateOptions& options) {
  const auto replayed = options.run.replayed();
  std::vector<Property<Call>> selected;
  for (Property<Call>& property : properties<Call>()) {
    const std::string short_name = property.name.substr(property.name.find('.') + 1);
    if (!options.property.empty() && options.property != property.name &&
        options.property != short_name)
      continue;
    if (!options.run.reproduce.empty() &&
        std::find(replayed.begin(), replayed.end(), property.name) == replayed.end())
      continue;
    selected.push_back(std::move(property));
  }
  return selected;
}

// Runs the selected properties over `impls`. Under a deadline, each property gets an equal share
// of the time left (what one leaves over goes to the next), so that every property runs some
// cases.
template <class Call>
std::vector<ImplReport> validate(const std::vector<const Impl<Call>*>& impls,
                                 const ValidateOptions& options) {
  std::vector<ImplReport> reports;
  for (const auto* impl : impls)
    reports.push_back({family_name(Call::kFamily),
                       impl->name,
                       "",
                       impl->bound,
                       {},
                       {},
                       impl->bound,
                       impl->variants,
                       impl->max_position});
  const auto selected = selected_properties<Call>(options);
  const auto rejection_shrunk = std::make_shared<std::set<std::string>>();
  for (size_t p = 0; p < selected.size(); ++p) {
    RunOptions run = options.run;
    run.rejection_shrunk = rejection_shrunk;
    if (run.deadline) {
      const auto now = std::chrono::steady_clock::now();
      run.deadline = now + std::max(*run.deadline - now, decltype(now - now){}) /
                               static_cast<int64_t>(selected.size() - p);
    }
    auto results = check(selected[p], impls, run);
    for (size_t i = 0; i < impls.size(); ++i) reports[i].results.push_back(std::move(results[i]));
  }
  for (ImplReport& report : reports) add_rejection(report);
  if (options.error_by_position && options.run.reproduce.empty())
    for (size_t i = 0; i < impls.size(); ++i)
      if (impls[i]->unavailable_reason().empty() && impls[i]->name != reference_impl<Call>().name)
        reports[i].bands = error_by_position(*impls[i], options.run.deadline);
  return reports;
}

// Whether a deadline cut any property short, and how ("3 properties stopped early, 2 not run").
bool cut_short(const std::vector<ImplReport>& reports);
std::string cut_summary(const std::vector<ImplReport>& reports);

// Per-property lines for one implementation, then its worst error by position band per dtype and
// where its bound stops holding.
std::string format_properties(const ImplReport& report);
// The summary's worst / bound cell: "1.5 / 1 (differential)", or "crashed (differential)" and
// "hung (…)" for a kernel that produced no error to show.
std::string headline_cell(const ImplReport& report);
// Whether the differential's measured errors would pass the tolerances peers test with
// (compare.h's kPeerTolerances), one line; "" when the differential did not run.
std::string format_peers(const ImplReport& report);
// The error-by-position table and envelope lines alone ("" when no band was measured).
std::string format_bands(const ImplReport& report);
// One row per implementation: family, implementation, properties passed/failed/skipped, cases,
// worst error against its bound, verdict.
std::string format_summary(const std::vector<ImplReport>& reports);

}  // namespace posenc::harness
