#include "properties/check.h"

#include <fmt/format.h>

#include <chrono>

namespace posenc::check {

bool Result::passed() const {
  return !report.failed() && report.count(harness::PropertyResult::Status::passed) > 0;
}

std::string Result::text() const {
  std::string s = harness::format_properties(report);
  for (const auto& r : report.results)
    if (r.failed())
      s += "\n" +
           harness::failure_report(r,
                                   "posenc::check::Options::reproduce = \"" + r.reproduce + "\"") +
           "\n";
  if (harness::cut_short({report}))
    s += "\nthe time budget cut the run short: " + harness::cut_summary({report}) + "\n";
  return s;
}

template <class Call>
Result run(std::function<void(const Call&)> kernel, const Options& options) {
  const Impl<Call> impl{.name = std::string(family_name(Call::kFamily)) + "/" + options.name,
                        .variants = options.variants,
                        .bound = Bound(options.bound, options.bound_bf16, options.bound_f16),
                        .run = std::move(kernel),
                        .unavailable = nullptr,
                        .threaded = options.threaded,
                        .max_position = options.max_position};
  harness::ValidateOptions validate;
  validate.run = options.run;
  validate.run.reproduce = options.reproduce;
  validate.property = options.property;
  if (options.time_budget)
    validate.run.deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(*options.time_budget));
  auto reports = harness::validate<Call>({&impl}, validate);
  return {std::move(reports.front())};
}

#define POSENC_FAMILY(name, Call, NAME)                                  \
  template Result run(std::function<void(const Call&)>, const Options&); \
  Result name(std::function<void(const Call&)> k, const Options& o) { return run(std::move(k), o); }
#include "posenc/families.inc"

}  // namespace posenc::check
