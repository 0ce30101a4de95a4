// The harness tests itself (ctest label `property`): every broken kernel of
// properties/<family>_broken.cc must be caught by the property designed to catch it, and every
// property must catch at least one broken kernel, or name the family whose broken kernel fails its
// generic twin.
#include "properties/selftest.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "properties/property.h"

namespace posenc::harness {
namespace {

template <class Call>
void expect_every_bug_caught() {
  const auto broken = broken_implementations<Call>();
  std::vector<const Impl<Call>*> impls;
  for (const auto& b : broken) impls.push_back(&b.impl);
  const RunOptions options = RunOptions::from_environment();
  std::map<std::string, std::vector<std::string>> caught;   // impl → properties that failed it
  std::map<std::string, std::vector<std::string>> killers;  // property → impls it failed
  std::map<std::string, std::string> reports;               // impl → its designed failure
  for (const Property<Call>& property : properties<Call>()) {
    killers[property.name];
    for (const PropertyResult& r : check(property, impls, options)) {
      // Caught means a real counterexample, not a run that could not start.
      if (!r.failed() || r.reproduce.empty()) continue;
      caught[r.impl].push_back(property.name);
      killers[property.name].push_back(r.impl);
      reports.emplace(r.impl + " " + property.name,
                      failure_report(r, fmt::format("posenc validate --impl {} --reproduce '{}'",
                                                    r.impl, r.reproduce)));
    }
  }
  fmt::print("{:<44} {:<26} {}\n", "broken kernel", "designed to be caught by", "caught by");
  for (const auto& b : broken) {
    const auto& by = caught[b.impl.name];
    std::string list;
    for (const auto& p : by) list += (list.empty() ? "" : ", ") + p;
    fmt::print("{:<44} {:<26} {}\n", b.impl.name, b.caught_by, list.empty() ? "NOTHING" : list);
    EXPECT_NE(std::find(by.begin(), by.end(), b.caught_by), by.end())
        << b.impl.name << " (" << b.bug << ") was not caught by " << b.caught_by;
  }
  for (const auto& b : broken) {
    auto it = reports.find(b.impl.name + " " + b.caught_by);
    if (it != reports.end()) fmt::print("\n--- {} ({}):\n{}\n", b.impl.name, b.bug, it->second);
  }
  const auto elsewhere = killed_elsewhere<Call>();
  for (const auto& [property, impls_failed] : killers) {
    if (!impls_failed.empty()) continue;
    auto it = std::find_if(elsewhere.begin(), elsewhere.end(),
                           [&](const auto& e) { return e.first == property; });
    if (it != elsewhere.end()) {
      fmt::print("{}: no broken kernel in this family; its generic twin is killed by {}\n",
                 property, it->second);
      continue;
    }
    ADD_FAILURE() << property << " failed no broken kernel: a property that cannot fail";
  }
  std::fflush(stdout);
}

#define POSENC_FAMILY(name, Call, NAME) \
  TEST(Selftest, name) { expect_every_bug_caught<Call>(); }
#include "posenc/families.inc"

// Each killed_elsewhere entry names broken kernels that exist and are designed to fail the same
// generic property in their own family (which that family's test then asserts).
TEST(Selftest, killed_elsewhere_names_real_killers) {
  std::map<std::string, std::string> designed;  // broken kernel → property designed to catch it
  std::vector<std::pair<std::string, std::string>> claims;
  for_each_family([&](auto tag) {
    using Call = typename decltype(tag)::type;
    for (const auto& b : broken_implementations<Call>()) designed[b.impl.name] = b.caught_by;
    for (const auto& claim : killed_elsewhere<Call>()) claims.push_back(claim);
  });
  for (const auto& [property, killers] : claims) {
    const std::string generic = property.substr(property.find('.'));
    size_t start = 0;
    while (start < killers.size()) {
      size_t end = killers.find(", ", start);
      if (end == std::string::npos) end = killers.size();
      const std::string name = killers.substr(start, end - start);
      const auto it = designed.find(name);
      ASSERT_NE(it, designed.end()) << property << " names " << name << ", no broken kernel";
      EXPECT_TRUE(it->second.ends_with(generic))
          << property << " names " << name << ", designed for " << it->second;
      start = end + 2;
    }
  }
}

}  // namespace
}  // namespace posenc::harness
