#include "properties/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace posenc::harness {

namespace {

using Status = PropertyResult::Status;

const char* status_name(Status s) {
  return s == Status::passed ? "passed" : s == Status::failed ? "failed" : "skipped";
}

// `text` as valid UTF-8 without the control characters XML forbids: a kernel's output, quoted in
// a failure, may hold any bytes. Bad bytes become U+FFFD, control characters '?'.
std::string clean_utf8(const std::string& text) {
  std::string out;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  auto cont = [&](size_t i) { return i < n && (s[i] & 0xC0) == 0x80; };
  for (size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    size_t len = 0;
    if (b < 0x80) {
      out += (b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F ? '?' : char(b);
      ++i;
      continue;
    }
    if (b >= 0xC2 && b <= 0xDF && cont(i + 1)) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF && cont(i + 1) && cont(i + 2)) {
      const unsigned char b1 = s[i + 1];
      const bool ok = (b != 0xE0 || b1 >= 0xA0) && (b != 0xED || b1 < 0xA0) &&
                      !(b == 0xEF && b1 == 0xBF && s[i + 2] >= 0xBE);  // U+FFFE, U+FFFF
      len = ok ? 3 : 0;
    } else if (b >= 0xF0 && b <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      const unsigned char b1 = s[i + 1];
      len = (b != 0xF0 || b1 >= 0x90) && (b != 0xF4 || b1 < 0x90) ? 4 : 0;
    }
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text, i, len);
      i += len;
    }
  }
  return out;
}

}  // namespace

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : clean_utf8(text)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// JSON has no infinity or NaN: those are null.
std::string json_number(double x) { return std::isfinite(x) ? fmt::format("{}", x) : "null"; }

namespace {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : clean_utf8(text)) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return "cannot open it for writing";
  out << text;
  out.close();
  return out ? "" : "write failed";
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The failure text with its replay line, as printed on the terminal.
std::string failure_text(const PropertyResult& r) {
  return failure_report(r, r.replay.empty() ? "--reproduce '" + r.reproduce + "'" : r.replay);
}

}  // namespace

std::string json_report(const std::vector<ImplReport>& reports, const RunInfo& info) {
  std::string s = "{\n";
  s += fmt::format(
      "  \"tool\": \"posenc validate\",\n  \"profile\": {},\n  \"seed\": {},\n"
      "  \"cases_per_property\": {},\n  \"time_budget_seconds\": {},\n  \"seconds\": {},\n"
      "  \"cut_short\": {},\n  \"pinned\": {},\n  \"implementations\": [",
      json_string(info.profile), info.seed, info.cases,
      info.time_budget ? json_number(*info.time_budget) : "null", json_number(info.seconds),
      cut_short(reports) ? "true" : "false",
      info.pinned.empty() ? "null" : json_string(info.pinned));
  for (size_t i = 0; i < reports.size(); ++i) {
    const ImplReport& r = reports[i];
    const PropertyResult* t = r.tightest();
    s += fmt::format(
        "{}\n    {{\"family\": {}, \"impl\": {}, \"source\": {}, \"bound\": {}, \"verdict\": {},"
        "\n     \"passed\": {}, \"failed\": {}, \"skipped\": {}, \"cases\": {},"
        "\n     \"worst\": {}, \"worst_property\": {},\n     \"properties\": [",
        i ? "," : "", json_string(r.family), json_string(r.impl),
        r.source.empty() ? "null" : json_string(r.source), json_number(r.bound),
        json_string(r.verdict()), r.count(Status::passed), r.count(Status::failed),
        r.count(Status::skipped), r.cases(), t ? json_number(t->worst) : "null",
        t ? json_string(t->property) : "null");
    for (size_t k = 0; k < r.results.size(); ++k) {
      const PropertyResult& p = r.results[k];
      s += fmt::format(
          "{}\n      {{\"property\": {}, \"statement\": {}, \"status\": {}, \"cases\": {}, "
          "\"worst\": {}, \"bound\": {}, \"seed\": {}, \"seconds\": {}",
          k ? "," : "", json_string(p.property), json_string(p.statement),
          json_string(status_name(p.status)), p.cases, json_number(p.worst), json_number(p.bound),
          p.seed, json_number(p.seconds));
      if (p.failed())
        s += fmt::format(", \"failure\": {}, \"reproduce\": {}, \"replay\": {}",
                         json_string(p.failure), json_string(p.reproduce), json_string(p.replay));
      if (!p.note.empty()) s += ", \"note\": " + json_string(p.note);
      if (!p.cut.empty()) s += ", \"cut\": " + json_string(p.cut);
      s += "}";
    }
    s += "],\n     \"error_by_position\": [";
    for (size_t k = 0; k < r.bands.size(); ++k) {
      const PositionBand& b = r.bands[k];
      s += fmt::format("{}{{\"dtype\": {}, \"lo\": {}, \"hi\": {}, \"worst\": {}, \"ok\": {}",
                       k ? ", " : "", json_string(dtype_name(b.dtype)), b.lo, b.hi,
                       json_number(b.worst), b.ok ? "true" : "false");
      s += b.ok ? "}" : ", \"failure\": " + json_string(b.failure) + "}";
    }
    s += "]}";
  }
  return s + "\n  ]\n}\n";
}

std::string junit_report(const std::vector<ImplReport>& reports, const RunInfo& info) {
  int tests = 0, failures = 0, skipped = 0;
  for (const auto& r : reports) {
    tests += static_cast<int>(r.results.size());
    failures += r.count(Status::failed);
    skipped += r.count(Status::skipped);
  }
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format(
      "<testsuites name=\"posenc validate\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "skipped=\"{}\" time=\"{:.3f}\">\n",
      tests, failures, skipped, info.seconds);
  for (const ImplReport& r : reports) {
    double seconds = 0;
    for (const auto& p : r.results) seconds += p.seconds;
    s += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" "
        "time=\"{:.3f}\">\n",
        xml_escape(r.impl), r.results.size(), r.count(Status::failed), r.count(Status::skipped),
        seconds);
    s += fmt::format(
        "    <properties><property name=\"family\" value=\"{}\"/><property name=\"bound\" "
        "value=\"{}\"/><property name=\"source\" value=\"{}\"/><property name=\"seed\" "
        "value=\"{}\"/></properties>\n",
        xml_escape(r.family), r.bound, xml_escape(r.source), info.seed);
    for (const PropertyResult& p : r.results) {
      s += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"",
                       xml_escape(r.impl), xml_escape(p.property), p.seconds);
      if (p.status == Status::passed && p.cut.empty()) {
        s += "/>\n";
        continue;
      }
      s += ">\n";
      if (p.failed())
        s += fmt::format("      <failure message=\"{}\" type=\"property\">{}</failure>\n",
                         xml_escape(first_line(p.failure)), xml_escape(failure_text(p)));
      if (p.status == Status::skipped)
        s += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(p.note));
      if (!p.cut.empty())
        s += fmt::format("      <system-out>{}</system-out>\n", xml_escape(p.cut));
      s += "    </testcase>\n";
    }
    s += "  </testsuite>\n";
  }
  return s + "</testsuites>\n";
}

namespace {

// Worst error against position for one implementation's outputs of one dtype: x is log2 of the
// band's upper end, y the band's worst error on a log scale, with the bound as a dashed line. Bands
// whose worst is 0 sit on the floor; failed bands are red.
std::string svg_chart(const ImplReport& report, DType dtype) {
  struct {
    std::string impl;
    double bound;
    std::vector<PositionBand> bands;
  } r{report.impl + " " + dtype_name(dtype), report.bounds.of(dtype), {}};
  for (const auto& b : report.bands)
    if (b.dtype == dtype) r.bands.push_back(b);
  constexpr double kWidth = 640, kHeight = 260, kLeft = 64, kRight = 16, kTop = 24, kBottom = 40;
  std::vector<double> positive;
  for (const auto& b : r.bands)
    if (b.worst > 0 && std::isfinite(b.worst)) positive.push_back(b.worst);
  if (r.bound > 0) positive.push_back(r.bound);
  double lo_exp = -3, hi_exp = 1;
  if (!positive.empty()) {
    const auto [mn, mx] = std::minmax_element(positive.begin(), positive.end());
    lo_exp = std::floor(std::log10(*mn)) - 1;
    hi_exp = std::ceil(std::log10(*mx)) + 1;
  }
  const double x_max = std::log2(static_cast<double>(kMaxPosition));
  auto x_of = [&](double log2_position) {
    return kLeft + (kWidth - kLeft - kRight) * log2_position / x_max;
  };
  auto y_of = [&](double value) {
    const double e = value > 0 && std::isfinite(value)
                         ? std::clamp(std::log10(value), lo_exp, hi_exp)
                         : (std::isfinite(value) ? lo_exp : hi_exp);
    return kTop + (kHeight - kTop - kBottom) * (hi_exp - e) / (hi_exp - lo_exp);
  };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"11\">\n",
      kWidth, kHeight, kWidth, kHeight);
  s += fmt::format("<title>{}: worst error against position</title>\n", xml_escape(r.impl));
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", kLeft,
      kTop, kWidth - kLeft - kRight, kHeight - kTop - kBottom);
  for (double e = lo_exp; e <= hi_exp; ++e)
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">1e{5}</text>\n",
        kLeft, kWidth - kRight, y_of(std::pow(10, e)), kLeft - 4, y_of(std::pow(10, e)) + 4,
        static_cast<int>(e));
  for (int k = 0; k <= static_cast<int>(x_max); k += 4)
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">2^{}</text>\n", x_of(k),
                     kHeight - kBottom + 14, k);
  s += fmt::format(
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">position (upper end of each band "
      "[2^k, 2^(k+1)])</text>\n",
      (kLeft + kWidth - kRight) / 2, kHeight - 6);
  s += fmt::format(
      "<text x=\"12\" y=\"{:.1f}\" transform=\"rotate(-90 12 {:.1f})\" "
      "text-anchor=\"middle\">worst error (tolerance units)</text>\n",
      (kTop + kHeight - kBottom) / 2, (kTop + kHeight - kBottom) / 2);
  if (r.bound > 0)
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#c00\" "
        "stroke-dasharray=\"6 4\"/><text x=\"{1}\" y=\"{3:.1f}\" text-anchor=\"end\" "
        "fill=\"#c00\">bound {4}</text>\n",
        kLeft, kWidth - kRight, y_of(r.bound), y_of(r.bound) - 4, r.bound);
  std::string points;
  for (const auto& b : r.bands)
    points +=
        fmt::format("{:.1f},{:.1f} ", x_of(std::log2(static_cast<double>(b.hi))), y_of(b.worst));
  s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#246\"/>\n", points);
  for (const auto& b : r.bands)
    s += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>positions [{}, {}]: worst "
        "{:.4g}{}</title></circle>\n",
        x_of(std::log2(static_cast<double>(b.hi))), y_of(b.worst), b.ok ? "#246" : "#c00", b.lo,
        b.hi, b.worst, xml_escape(b.ok ? "" : " — " + first_line(b.failure)));
  s += fmt::format("<text x=\"{}\" y=\"16\" font-weight=\"bold\">{}</text>\n", kLeft,
                   xml_escape(r.impl + " (bound " + fmt::format("{}", r.bound) + ")"));
  return s + "</svg>\n";
}

}  // namespace

std::string html_report(const std::vector<ImplReport>& reports, const RunInfo& info) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>posenc validate</title>\n<style>\nbody{font-family:sans-serif;margin:2em}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
      "text-align:left}.FAIL{color:#c00;font-weight:bold}pre{background:#f6f6f6;padding:8px;"
      "overflow-x:auto}\n</style>\n</head>\n<body>\n<h1>posenc validate</h1>\n";
  s += fmt::format("<p>{} profile, seed {}, {} cases per property{}, {:.1f} s.</p>\n",
                   xml_escape(info.profile), info.seed, info.cases,
                   info.time_budget ? fmt::format(", time budget {:g} s", *info.time_budget) : "",
                   info.seconds);
  if (!info.pinned.empty())
    s += "<p>Rope parameters pinned to " + xml_escape(info.pinned) + ".</p>\n";
  if (cut_short(reports))
    s +=
        "<p class=\"FAIL\">The time budget cut the run short: " + xml_escape(cut_summary(reports)) +
        ".</p>\n";
  s += "<h2>Summary</h2>\n<table>\n<tr><th>family</th><th>implementation</th><th>passed</th>"
       "<th>failed</th><th>skipped</th><th>cases</th><th>worst / bound (property)</th>"
       "<th>verdict</th></tr>\n";
  for (const ImplReport& r : reports) {
    const std::string verdict = r.verdict();
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"{}\">{}</td></tr>\n",
        xml_escape(r.family), xml_escape(r.impl), r.count(Status::passed), r.count(Status::failed),
        r.count(Status::skipped), r.cases(), xml_escape(headline_cell(r)),
        xml_escape(verdict.substr(0, 4)), xml_escape(verdict));
  }
  s += "</table>\n<h2>Worst error against position</h2>\n";
  bool any_chart = false;
  for (const ImplReport& r : reports) {
    if (r.bands.empty()) continue;
    any_chart = true;
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      if (std::any_of(r.bands.begin(), r.bands.end(),
                      [&](const PositionBand& b) { return b.dtype == dtype; }))
        s += "<figure>\n" + svg_chart(r, dtype) + "</figure>\n";
  }
  if (!any_chart)
    s += "<p>No implementation here has a position axis that the chart measures (sinusoidal, "
         "rope, ALiBi and T5 do).</p>\n";
  s += "<h2>Failures</h2>\n";
  bool any_failure = false;
  for (const ImplReport& r : reports)
    for (const PropertyResult& p : r.results)
      if (p.failed()) {
        any_failure = true;
        s += fmt::format("<h3>{}: {}</h3>\n<pre>{}</pre>\n", xml_escape(r.impl),
                         xml_escape(p.property), xml_escape(failure_text(p)));
      }
  if (!any_failure) s += "<p>None.</p>\n";
  return s + "</body>\n</html>\n";
}

std::string write_json(const std::string& path, const std::vector<ImplReport>& reports,
                       const RunInfo& info) {
  return write_file(path, json_report(reports, info));
}
std::string write_junit(const std::string& path, const std::vector<ImplReport>& reports,
                        const RunInfo& info) {
  return write_file(path, junit_report(reports, info));
}
std::string write_html(const std::string& path, const std::vector<ImplReport>& reports,
                       const RunInfo& info) {
  return write_file(path, html_report(reports, info));
}

}  // namespace posenc::harness
