// GoogleTest face of the property library: one test per property of a family, each checking every
// registered implementation. Included by properties/<family>_test.cc only (the harness library
// itself never includes GoogleTest).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "properties/property.h"

namespace posenc::harness {

inline std::string this_binary() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, n) : std::string("<test binary>");
}

// Checks one property over `impls` and reports each implementation's result.
template <class Call>
void expect_property(const Property<Call>& property, const std::vector<const Impl<Call>*>& impls) {
  const RunOptions options = RunOptions::from_environment();
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = fmt::format("{}.{}", test->test_suite_name(), test->name());
  const auto results = check(property, impls, options);
  bool classes_shown = false, any_ran = false;
  for (const PropertyResult& r : results) {
    if (r.status == PropertyResult::Status::skipped) {
      fmt::print("  {:<28} skipped: {}\n", r.impl, r.note);
      // A registered implementation declares what it supports; a property that reaches none of
      // its cases checked nothing (a plugin, in `posenc validate`, may just be narrow).
      if (r.note.starts_with("no case ran"))
        ADD_FAILURE() << r.impl << " " << property.name << ": " << r.note;
      continue;
    }
    any_ran = true;
    fmt::print(
        "  {:<28} {:<6} {:>6} cases  worst {:.3g} / bound {:.3g}  [{} profile, seed {}, "
        "{:.2f} s]\n",
        r.impl, r.failed() ? "FAILED" : "ok", r.cases, r.worst, r.bound, options.profile, r.seed,
        r.seconds);
    if (!r.classes.empty() && !classes_shown) {
      fmt::print("    classes: {}\n", describe_classes(r.classes));
      classes_shown = true;
    }
    if (r.failed()) {
      const std::string replay = fmt::format("RC_PARAMS=\"reproduce={}\" {} --gtest_filter='{}'",
                                             r.reproduce, this_binary(), name);
      ADD_FAILURE() << failure_report(r, replay);
    }
  }
  std::fflush(stdout);
  // Visible in ctest as skipped, never as a pass that checked nothing.
  if (!any_ran) GTEST_SKIP() << property.name << ": no registered implementation applies";
}

// Registers one test per property of Call's family, over the registry: Suite.<property>.
template <class Call>
bool register_properties(const char* suite) {
  for (const Property<Call>& property : properties<Call>()) {
    const std::string name = property.name.substr(property.name.find('.') + 1);
    ::testing::RegisterTest(suite, name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [property]() -> ::testing::Test* {
                              struct T : ::testing::Test {
                                explicit T(Property<Call> p) : p(std::move(p)) {}
                                void TestBody() override {
                                  std::vector<const Impl<Call>*> impls;
                                  for (const auto& impl : implementations<Call>())
                                    impls.push_back(&impl);
                                  expect_property(p, impls);
                                }
                                Property<Call> p;
                              };
                              return new T(property);
                            });
  }
  return true;
}

}  // namespace posenc::harness
