// `posenc validate`'s reports as files: JSON for machines, JUnit XML for CI systems (one test
// suite per implementation, one test case per property), and a self-contained HTML page whose
// inline SVG charts show each implementation's worst error against position, on log scales, with
// its bound. Each writer returns "" on success, else why it could not write.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "posenc/properties/validate.h"

namespace posenc::harness {

// How the run was made, for the reports' headers.
struct RunInfo {
  std::string profile;
  uint64_t seed = 0;
  int cases = 0;                      // per property
  std::optional<double> time_budget;  // seconds
  double seconds = 0;                 // the whole run
  // The model whose rope parameters the run pinned (`--config`, PinnedRope): its config and
  // layer, then the parameters; "" when none.
  std::string pinned;
};

std::string write_json(const std::string& path, const std::vector<ImplReport>& reports,
                       const RunInfo& info);
std::string write_junit(const std::string& path, const std::vector<ImplReport>& reports,
                        const RunInfo& info);
std::string write_html(const std::string& path, const std::vector<ImplReport>& reports,
                       const RunInfo& info);

// A JSON string of `text` (invalid UTF-8 replaced), and a JSON number (null for ±∞ and NaN).
std::string json_string(const std::string& text);
std::string json_number(double x);

// The same documents as strings.
std::string json_report(const std::vector<ImplReport>& reports, const RunInfo& info);
std::string junit_report(const std::vector<ImplReport>& reports, const RunInfo& info);
std::string html_report(const std::vector<ImplReport>& reports, const RunInfo& info);

}  // namespace posenc::harness
