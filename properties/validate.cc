#include "properties/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

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

const PropertyResult* ImplReport::headline() const {
  for (const auto& r : results)
    if (r.property.ends_with(".differential") && r.status != PropertyResult::Status::skipped)
      return &r;
  if (const PropertyResult* t = tightest()) return t;
  for (const auto& r : results)
    if (r.failed()) return &r;
  return nullptr;
}

std::string ImplReport::meaningless_bound() const {
  // One unit is at least 2^-(p-1) of the magnitude it measures (p significant bits), so a bound of
  // 2^(p-1) units allows an error as large as the output itself at the bottom of every binade.
  // rope_frequencies' outputs are f64, whatever the activations' dtype bits say.
  if (family == "rope_frequencies") return "";
  std::string s;
  for (auto [bit, dtype, bits] :
       {std::tuple{variant::f32, DType::f32, 24}, std::tuple{variant::bf16, DType::bf16, 8},
        std::tuple{variant::f16, DType::f16, 11}}) {
    const double b = bounds.of(dtype), admits_all = std::ldexp(1.0, bits - 1);
    if ((variants & bit) && b >= admits_all)
      s += fmt::format("{}{} bound {:g} >= 2^{} units, the outputs' own magnitude",
                       s.empty() ? "" : "; ", dtype_name(dtype), b, bits - 1);
  }
  return s;
}

std::string ImplReport::verdict() const {
  if (!meaningless_bound().empty()) return "FAIL: meaningless bound (" + meaningless_bound() + ")";
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

void add_rejection(ImplReport& report) {
  int64_t rejections = 0;
  const PropertyResult* first = nullptr;
  for (const auto& r : report.results) {
    rejections += r.rejections;
    if (!first && !r.rejection.empty()) first = &r;
  }
  if (rejections == 0) return;
  PropertyResult row{report.family + ".declared_inputs",
                     "accepts every input inside the variants and conventions it declares",
                     report.impl, PropertyResult::Status::failed};
  row.cases = rejections;
  row.seed = report.results.front().seed;
  if (first) {
    row.failure = fmt::format("{} (first in {}; {} rejected cases in all)\n{}", row.statement,
                              first->property, rejections, first->rejection);
    row.reproduce = first->rejection_reproduce;
  } else {
    row.failure = fmt::format("{}: it rejected {} cases (shrinking did not repeat one)",
                              row.statement, rejections);
  }
  report.results.push_back(std::move(row));
}

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

namespace {

// A crashed or hung kernel's row says so instead of an error it never produced.
std::string failure_kind(const PropertyResult& r) {
  if (!r.failed()) return "";
  if (r.failure.find(" crashed: ") != std::string::npos) return "crashed";
  if (r.failure.find(" hung: ") != std::string::npos) return "hung";
  if (r.failure.find(" read outside ") != std::string::npos) return "read outside";
  return "";
}

}  // namespace

std::string headline_cell(const ImplReport& r) {
  const PropertyResult* h = r.headline();
  if (!h) return "-";
  const std::string name = h->property.substr(h->property.find('.') + 1);
  if (const std::string kind = failure_kind(*h); !kind.empty())
    return fmt::format("{} ({})", kind, name);
  return fmt::format("{:.3g} / {:.3g} ({})", h->worst, h->bound, name);
}

std::string format_bands(const ImplReport& report) {
  if (report.bands.empty()) return "";
  const std::vector<Envelope> env = envelopes(report.bands, report.bounds);
  std::string s = "  worst error by position band [2^k, 2^(k+1)), in units of each dtype:\n";
  s += fmt::format("    {:<22}", "positions");
  for (const Envelope& e : env) s += fmt::format(" {:>10}", dtype_name(e.dtype));
  s += "\n";
  std::vector<int64_t> his;
  for (const PositionBand& b : report.bands)
    if (std::find(his.begin(), his.end(), b.hi) == his.end()) his.push_back(b.hi);
  for (int64_t hi : his) {
    std::string row;
    int64_t lo = 0;
    for (const Envelope& e : env) {
      std::string cell = "-";
      for (const PositionBand& b : report.bands)
        if (b.dtype == e.dtype && b.hi == hi) {
          lo = b.lo;
          cell =
              b.ok ? fmt::format("{:.3g}", b.worst)
                   : (b.failure.starts_with("threw: ") ? "threw" : fmt::format("{:.3g}*", b.worst));
        }
      row += fmt::format(" {:>10}", cell);
    }
    s += fmt::format("    {:<22}{}\n", fmt::format("[{}, {}]", lo, hi), row);
  }
  if (std::any_of(report.bands.begin(), report.bands.end(),
                  [](const PositionBand& b) { return !b.ok; }))
    s += "    (* above the stated bound)\n";
  for (const Envelope& e : env) {
    s += fmt::format("  {}: {}", dtype_name(e.dtype), describe(e));
    if (report.max_position > 0)
      s += e.meets_up_to >= report.max_position
               ? fmt::format("; holds up to its claimed max_position {}", report.max_position)
               : fmt::format("; does NOT hold up to its claimed max_position {}",
                             report.max_position);
    s += "\n";
  }
  return s;
}

std::string format_peers(const ImplReport& report) {
  const PropertyResult* d = nullptr;
  for (const auto& r : report.results)
    if (r.property.ends_with(".differential") && r.status != PropertyResult::Status::skipped)
      d = &r;
  if (!d) return "";
  std::string s;
  for (size_t p = 0; p < kPeerTolerances.size(); ++p) {
    const PeerTolerance& t = kPeerTolerances[p];
    const double x = d->peers[p];
    if (x < 0) continue;  // no output of its dtype compared
    const std::string tolerance = t.atol > 0 ? fmt::format("atol {:g} rtol {:g}", t.atol, t.rtol)
                                             : fmt::format("relative {:g}", t.rtol);
    s += fmt::format("{}{} {} ({}): {}", s.empty() ? "" : "; ", t.peer, dtype_name(t.dtype),
                     tolerance,
                     x == 0   ? "would pass (exact)"
                     : x <= 1 ? fmt::format("would pass ({:.2g}x its allowance)", x)
                              : fmt::format("would FAIL ({:.2g}x its allowance)", x));
  }
  if (s.empty()) return "";
  return fmt::format("  peer tolerances, over the differential's {} cases: {}\n", d->cases, s);
}

std::string format_properties(const ImplReport& report) {
  std::string s = fmt::format("{} ({})\n", report.impl, report.family);
  if (const std::string c = describe_conventions(report.variants); !c.empty())
    s += "  declares: " + c + "\n";
  for (const auto& r : report.results) {
    std::string verdict = r.status == PropertyResult::Status::passed    ? "pass"
                          : r.status == PropertyResult::Status::skipped ? "skipped: " + r.note
                          : r.failure.starts_with("too few cases")
                              ? "FAIL: " + r.failure.substr(0, r.failure.find(':'))
                              : "FAIL";
    const std::string cases =
        r.status == PropertyResult::Status::skipped ? "-" : std::to_string(r.cases);
    const std::string error = r.status == PropertyResult::Status::skipped
                                  ? "-"
                                  : fmt::format("{:.3g} / {:.3g}", r.worst, r.bound);
    if (!r.cut.empty()) verdict += " (" + r.cut + ")";
    if (r.rejections > 0 && !r.property.ends_with(".declared_inputs"))
      verdict += fmt::format(" ({} rejected cases not counted: see {}.declared_inputs)",
                             r.rejections, report.family);
    s += fmt::format("  {:<40} {:>6} {:>18}  {}\n", r.property, cases, error, verdict);
  }
  return s + format_bands(report) + format_peers(report);
}

std::string format_summary(const std::vector<ImplReport>& reports) {
  std::string s =
      fmt::format("{:<18} {:<40} {:>4} {:>4} {:>4} {:>7}  {:<36} {}\n", "family", "implementation",
                  "pass", "fail", "skip", "cases", "worst / bound (property)", "verdict");
  for (const auto& r : reports) {
    const std::string error = headline_cell(r);
    s += fmt::format("{:<18} {:<40} {:>4} {:>4} {:>4} {:>7}  {:<36} {}\n", r.family, r.impl,
                     r.count(PropertyResult::Status::passed),
                     r.count(PropertyResult::Status::failed),
                     r.count(PropertyResult::Status::skipped), r.cases(), error, r.verdict());
  }
  return s;
}

}  // namespace posenc::harness
