#include "properties/validate.h"

#include <fmt/format.h>

#include <algorithm>

namespace posenc::harness {

int ImplReport::count(PropertyResult::Status status) const {
  return static_cast<int>(std::count_if(
      results.begin(), results.end(), [&](const PropertyResult& r) { return r.status == status; }));
}

int64_t ImplReport::cases() const {
  int64_t n = 0;
  for (const auto& r : results) n += r.cases;
  return n;
}

const PropertyResult* ImplReport::tightest() const {
  const PropertyResult* best = nullptr;
  for (const auto& r : results) {
    if (r.status == PropertyResult::Status::skipped || r.bound <= 0) continue;
    if (!best || r.worst / r.bound > best->worst / best->bound) best = &r;
  }
  return best;
}

std::string ImplReport::verdict() const {
  if (failed()) return "FAIL";
  if (count(PropertyResult::Status::passed) > 0) return "pass";
  if (!results.empty()) return "skipped: " + results.front().note;
  return "no property ran";
}

namespace {
bool budget_skipped(const PropertyResult& r) {
  return r.status == PropertyResult::Status::skipped &&
         (r.note.starts_with("not run: the time budget") ||
          r.note.starts_with("not run: a signal"));
}
// A cut by the time budget or a signal (not shrinking stopped at a hanging case, which is the
// failure's own story).
bool budget_cut(const PropertyResult& r) {
  return !r.cut.empty() && !r.cut.starts_with("shrinking stopped after");
}
}  // namespace

bool cut_short(const std::vector<ImplReport>& reports) {
  for (const auto& report : reports)
    for (const auto& r : report.results)
      if (budget_cut(r) || budget_skipped(r)) return true;
  return false;
}

std::string cut_summary(const std::vector<ImplReport>& reports) {
  int stopped = 0, not_run = 0;
  for (const auto& report : reports)
    for (const auto& r : report.results) {
      stopped += budget_cut(r);
      not_run += budget_skipped(r);
    }
  return fmt::format("{} property runs stopped early, {} not run", stopped, not_run);
}

std::string format_properties(const ImplReport& report) {
  std::string s = fmt::format("{} ({})\n", report.impl, report.family);
  for (const auto& r : report.results) {
    std::string verdict = r.status == PropertyResult::Status::passed   ? "pass"
                          : r.status == PropertyResult::Status::failed ? "FAIL"
                                                                       : "skipped: " + r.note;
    const std::string cases =
        r.status == PropertyResult::Status::skipped ? "-" : std::to_string(r.cases);
    const std::string error = r.status == PropertyResult::Status::skipped
                                  ? "-"
                                  : fmt::format("{:.3g} / {:.3g}", r.worst, r.bound);
    if (!r.cut.empty()) verdict += " (" + r.cut + ")";
    s += fmt::format("  {:<40} {:>6} {:>18}  {}\n", r.property, cases, error, verdict);
  }
  return s;
}

std::string format_summary(const std::vector<ImplReport>& reports) {
  std::string s =
      fmt::format("{:<18} {:<40} {:>4} {:>4} {:>4} {:>7}  {:<36} {}\n", "family", "implementation",
                  "pass", "fail", "skip", "cases", "worst / bound (property)", "verdict");
  for (const auto& r : reports) {
    const PropertyResult* t = r.tightest();
    const std::string error = t ? fmt::format("{:.3g} / {:.3g} ({})", t->worst, t->bound,
                                              t->property.substr(t->property.find('.') + 1))
                                : "-";
    s += fmt::format("{:<18} {:<40} {:>4} {:>4} {:>4} {:>7}  {:<36} {}\n", r.family, r.impl,
                     r.count(PropertyResult::Status::passed),
                     r.count(PropertyResult::Status::failed),
                     r.count(PropertyResult::Status::skipped), r.cases(), error, r.verdict());
  }
  return s;
}

}  // namespace posenc::harness
