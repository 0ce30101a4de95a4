// Runs a property through RapidCheck and turns its outcome into one PropertyResult per
// implementation. Over 600 lines: the case loop, shrinking, hang handling, the time budget and the
// coverage classes' minimum shares all read one run's state.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include "properties/property.h"

namespace posenc::harness {

namespace rcd = rc::detail;

Verdict Verdict::of(const Comparison& c, const std::string& what) {
  Verdict v{c.ok, c.worst, c.bound, "", c.peers};
  if (!c.ok) v.detail = (what.empty() ? "" : what + ": ") + c.describe();
  return v;
}

namespace {
thread_local Declared current_declared;
}  // namespace

const Declared& declared() { return current_declared; }

DeclaredScope::DeclaredScope(const Declared& declared) : saved_(current_declared) {
  current_declared = declared;
}
DeclaredScope::~DeclaredScope() { current_declared = saved_; }

std::string variant_names(Family family, uint64_t bits) {
  std::vector<VariantName> names(variant::shared_names.begin(), variant::shared_names.end());
  names.insert(names.end(), variant::convention_names.begin(), variant::convention_names.end());
  for_each_family([&]<class Call>(std::type_identity<Call>) {
    if (Call::kFamily != family) return;
    static constexpr auto own = Call::variant_table();
    names.insert(names.end(), own.begin(), own.end());
  });
  std::string s;
  for (const auto& [bit, name] : names)
    if (bits & bit) {
      s += (s.empty() ? "" : ", ") + std::string(name);
      bits &= ~bit;
    }
  for (int b = 0; b < 64; ++b)  // a bit this posenc gives no name
    if (bits >> b & 1) s += fmt::format("{}bit {}", s.empty() ? "" : ", ", b);
  return s;
}

std::string describe_conventions(uint64_t variants) {
  const uint64_t accepted = variant::with_conventions(variants);
  std::string s;
  auto add = [&](const char* what) { s += (s.empty() ? "" : ", ") + std::string(what); };
  if (!(accepted & variant::nonfinite_inputs))
    add("finite inputs only (±∞ and NaN are not generated)");
  if (!(accepted & variant::positions_i32)) add("int64 positions only");
  if (!(accepted & variant::positions_i64)) add("int32 positions only");
  if (!(accepted & variant::yarn_untruncated))
    add("YaRN's correction range always rounded (truncate = true only)");
  return s;
}

void CaseLog::begin(size_t implementations) {
  verdicts_.assign(implementations, std::nullopt);
  missing_.assign(implementations, 0);
  skipped_ = false;
}

void CaseLog::record(size_t impl, Verdict verdict) { verdicts_[impl] = std::move(verdict); }

void CaseLog::finish(const std::vector<std::string>& names) const {
  std::string message;
  for (size_t i = 0; i < verdicts_.size(); ++i)
    if (verdicts_[i] && fails(*verdicts_[i]))
      message +=
          fmt::format("{}{}: {}", message.empty() ? "" : "\n", names[i], verdicts_[i]->detail);
  if (!message.empty()) fail_case(message);
}

void fail_case(const std::string& message) {
  throw rcd::CaseResult(rcd::CaseResult::Type::Failure, message);
}

namespace {
std::atomic<bool> stop_flag{false};
}  // namespace

void request_stop() noexcept { stop_flag.store(true, std::memory_order_relaxed); }
bool stop_requested() noexcept { return stop_flag.load(std::memory_order_relaxed); }

namespace {

// A case on which a kernel hung cost a whole call timeout: after the first failing case and 2
// shrink candidates that hung, shrinking stops at the smallest hanging case found.
constexpr int kMaxHangingCases = 3;

// Whether an implementation hung on the case just run ("rope/x hung: timed out after 10 s"), or
// was not called because its library hung too often ("rope/x not called: its library hung 3
// times already", plugin/loader.cc).
enum class Hang { none, hung, not_called };
Hang hang_in(const CaseLog& log) {
  Hang hang = Hang::none;
  for (const auto& v : log.verdicts())
    if (v && !v->ok && v->detail.find(" hung") != std::string::npos)
      hang = v->detail.find(" not called: ") != std::string::npos ? Hang::not_called : Hang::hung;
  return hang;
}

bool truthy(const char* s) { return s != nullptr && *s != '\0'; }

std::unordered_map<std::string, rcd::Reproduce> decode(const std::string& value) {
  try {
    return rcd::configFromString("reproduce=" + value).reproduce;
  } catch (const std::exception&) {
    return {};
  }
}

std::string encode(const std::string& id, const rcd::Reproduce& reproduce) {
  rcd::Configuration config;
  config.reproduce[id] = reproduce;
  // configToMinimalString also prints keys that differ from a default configuration (the seed);
  // keep the reproduce value alone.
  const std::string s = rcd::configToMinimalString(config);
  const auto at = s.find("reproduce=");
  if (at == std::string::npos) return "";
  const auto begin = at + 10, end = s.find(' ', begin);
  return s.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::string strip_quotes(std::string tag) {
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"')
    return tag.substr(1, tag.size() - 2);
  return tag;
}

struct Tally {
  int64_t cases = 0;
  double worst = 0, bound = 0;
  PeerExcess peers = kNoPeerExcess;
  uint64_t missing = 0;    // variant bits of the calls it sat out
  int64_t rejections = 0;  // cases it rejected inside what it declares (not counted in `cases`)
};

// One RapidCheck run over the implementations in `active`.
struct Pass {
  enum class Outcome { passed, failed, broken } outcome = Outcome::passed;
  std::vector<Tally> tallies;                               // per active implementation
  std::vector<std::optional<Verdict>> first_failure;        // the first failing case's verdicts
  std::vector<std::optional<Verdict>> minimal;              // the shrunk case's verdicts
  std::string message, counterexample, reproduce, trouble;  // trouble: the run itself broke
  int64_t cases = 0;
  int64_t cut = 0;        // cases not run because the deadline had passed
  int hanging_cases = 0;  // failing cases and shrink candidates on which an implementation hung
  std::map<std::string, int64_t> tags;
  // The smallest failing case run so far, as it ran. RapidCheck runs the final counterexample once
  // more to describe it; once the deadline has passed that run is skipped, and these stand in.
  struct Failing {
    std::string message, counterexample;
    std::vector<std::optional<Verdict>> verdicts;
  };
  std::optional<Failing> smallest;
};

std::string describe_example(const rcd::Example& example) {
  std::string text;
  for (const auto& [type, value] : example) text += fmt::format("  {}\n", value);
  return text;
}

class Listener : public rcd::TestListener {
 public:
  Listener(Pass& pass, const CaseLog& log) : pass_(pass), log_(log) {}

  void onTestCaseFinished(const rcd::CaseDescription& d) override {
    if (d.result.type == rcd::CaseResult::Type::Discard || log_.skipped()) return;
    ++pass_.cases;
    for (const auto& tag : d.tags) ++pass_.tags[strip_quotes(tag)];
    const auto& verdicts = log_.verdicts();
    for (size_t i = 0; i < log_.missing().size() && i < pass_.tallies.size(); ++i)
      pass_.tallies[i].missing |= log_.missing()[i];
    for (size_t i = 0; i < verdicts.size() && i < pass_.tallies.size(); ++i) {
      if (!verdicts[i]) continue;
      Tally& t = pass_.tallies[i];
      if (verdicts[i]->rejected) {
        ++t.rejections;
        continue;
      }
      ++t.cases;
      t.worst = std::max(t.worst, verdicts[i]->worst);
      t.bound = std::max(t.bound, verdicts[i]->bound);
      merge_peers(t.peers, verdicts[i]->peers);
    }
    if (d.result.type == rcd::CaseResult::Type::Failure) {
      if (pass_.first_failure.empty()) pass_.first_failure = verdicts;
      pass_.hanging_cases += hang_in(log_) != Hang::none;
      remember(d);
    }
  }
  void onShrinkTried(const rcd::CaseDescription& d, bool accepted) override {
    if (log_.skipped()) return;
    const Hang hang = hang_in(log_);
    pass_.hanging_cases += hang != Hang::none;
    if (accepted && hang != Hang::not_called) remember(d);  // a case not run is no smaller case
  }
  void onTestFinished(const rcd::TestMetadata&, const rcd::TestResult&) override {}

 private:
  void remember(const rcd::CaseDescription& d) {
    pass_.smallest = Pass::Failing{d.result.description,
                                   d.example ? describe_example(d.example()) : "", log_.verdicts()};
  }

  Pass& pass_;
  const CaseLog& log_;
};

Pass run_pass(const std::string& id, const CaseBody& body, const std::vector<size_t>& active,
              const RunOptions& options, bool shrink,
              CaseLog::Fails fails = CaseLog::Fails::checks) {
  Pass pass;
  pass.tallies.resize(active.size());
  CaseLog log;
  log.set_fails(options.reproduce.empty() ? fails : CaseLog::Fails::both);
  bool replayed = false;
  // A replay runs its one case whatever the time.
  const bool budgeted = options.deadline && options.reproduce.empty();
  auto property = rcd::toProperty([&] {
    const bool out_of_time = (budgeted && std::chrono::steady_clock::now() >= *options.deadline) ||
                             (options.reproduce.empty() && stop_requested()) ||
                             pass.hanging_cases >= kMaxHangingCases;
    if (out_of_time) {
      log.begin(active.size());
      log.skip();
      ++pass.cut;
      return;
    }
    replayed = true;
    body(active, log);
  });
  rcd::TestParams params;
  params.seed = options.seed;
  params.maxSuccess = options.cases;
  params.disableShrinking = !shrink;
  rcd::TestMetadata metadata{id, id};
  Listener listener(pass, log);
  std::unordered_map<std::string, rcd::Reproduce> reproduce;
  if (!options.reproduce.empty()) {
    reproduce = decode(options.reproduce);
    if (reproduce.empty()) {
      pass.outcome = Pass::Outcome::broken;
      pass.trouble = "the reproduce value does not decode: '" + options.reproduce + "'";
      return pass;
    }
  }
  const rcd::TestResult result =
      rcd::checkProperty(property, metadata, params, listener, reproduce);
  if (!options.reproduce.empty() && replayed && pass.cases == 0) {
    // A replay runs its one case without telling the listener: count it from the log.
    pass.cases = 1;
    const auto& verdicts = log.verdicts();
    for (size_t i = 0; i < verdicts.size(); ++i) {
      if (!verdicts[i]) continue;
      ++pass.tallies[i].cases;
      pass.tallies[i].worst = verdicts[i]->worst;
      pass.tallies[i].bound = verdicts[i]->bound;
      pass.tallies[i].peers = verdicts[i]->peers;
    }
  }
  if (result.is<rcd::FailureResult>()) {
    const auto& f = result.get<rcd::FailureResult>();
    pass.outcome = Pass::Outcome::failed;
    pass.message = f.description;
    pass.counterexample = describe_example(f.counterExample);
    pass.reproduce = encode(id, f.reproduce);
    pass.minimal = log.verdicts();  // the last case run is the smallest failing one
    // That last run was skipped (past the deadline), or its kernel was no longer called.
    if ((log.skipped() || hang_in(log) == Hang::not_called) && pass.smallest) {
      pass.message = pass.smallest->message;
      pass.counterexample = pass.smallest->counterexample;
      pass.minimal = pass.smallest->verdicts;
    }
    if (pass.first_failure.empty()) pass.first_failure = pass.minimal;
  } else if (result.is<rcd::GaveUpResult>()) {
    pass.outcome = Pass::Outcome::broken;
    pass.trouble = "gave up: " + result.get<rcd::GaveUpResult>().description;
  } else if (result.is<rcd::Error>()) {
    // RapidCheck reports a replayed case that no longer fails as an error: it passed.
    const auto& e = result.get<rcd::Error>();
    if (options.reproduce.empty() || !replayed) {
      pass.outcome = Pass::Outcome::broken;
      pass.trouble = e.description;
    }
  }
  return pass;
}

// The variant bits a class of the bits every family shares needs (MinimumShare).
uint64_t shared_class_needs(const std::string& tag) {
  if (tag == "f32") return variant::f32;
  if (tag == "bf16") return variant::bf16;
  if (tag == "f16") return variant::f16;
  if (tag == "strided") return variant::strided;
  if (tag == "in place") return variant::in_place;
  return 0;
}

// Whether the generators can draw class `m` for what is declared (declared()).
bool drawable(const MinimumShare& m) {
  const Declared& d = declared();
  return d.has(m.needs | shared_class_needs(m.tag)) && (m.needs_any == 0 || d.has_any(m.needs_any));
}

std::vector<ClassShare> shares(const Pass& pass, const std::vector<MinimumShare>& minimum) {
  std::vector<ClassShare> out;
  const double n = std::max<int64_t>(pass.cases, 1);
  for (const auto& [tag, count] : pass.tags) out.push_back({tag, count / n, 0.0});
  for (const auto& m : minimum) {
    if (!drawable(m)) continue;
    auto it =
        std::find_if(out.begin(), out.end(), [&](const ClassShare& c) { return c.tag == m.tag; });
    if (it == out.end()) it = out.insert(out.end(), ClassShare{m.tag, 0.0, 0.0});
    it->minimum = m.share;
  }
  return out;
}

// Classification needs enough cases to mean anything: a replay or a short run is not judged.
constexpr int64_t kMinCasesForShares = 100;

std::string below_minimum(const std::vector<ClassShare>& classes, int64_t cases) {
  if (cases < kMinCasesForShares) return "";
  std::string why;
  for (const auto& c : classes)
    if (c.share < c.minimum)
      why +=
          fmt::format("{}input class '{}' reached {:.1f}% of {} cases, below its {:.3g}% minimum",
                      why.empty() ? "" : "; ", c.tag, 100 * c.share, cases, 100 * c.minimum);
  return why;
}

}  // namespace

std::string failure_report(const PropertyResult& r, const std::string& replay) {
  std::string s = fmt::format("{} FAILED for {} on case {} (seed {}):\n{}", r.property, r.impl,
                              r.cases, r.seed, r.failure);
  if (!r.reproduce.empty()) s += "\nreplay: " + replay;
  return s;
}

std::string describe_classes(const std::vector<ClassShare>& classes) {
  std::string s;
  for (const auto& c : classes) {
    s += fmt::format("{}{} {:.0f}%", s.empty() ? "" : ", ", c.tag, 100 * c.share);
    if (c.minimum > 0) s += fmt::format(" (≥ {:.3g}%)", 100 * c.minimum);
  }
  return s;
}

RunOptions RunOptions::from_environment() {
  RunOptions o;
  const char* profile = std::getenv("POSENC_PROFILE");
  if (truthy(profile) && std::string(profile) == "nightly") {
    o.profile = "nightly";
    o.cases *= 20;
    o.seed = std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  }
  if (const char* params = std::getenv("RC_PARAMS"); truthy(params)) {
    rcd::Configuration defaults;
    defaults.testParams.seed = o.seed;
    defaults.testParams.maxSuccess = o.cases;
    const auto config = rcd::configFromString(params, defaults);
    o.seed = config.testParams.seed;
    o.cases = config.testParams.maxSuccess;
    const std::string s = params;
    if (const auto at = s.find("reproduce="); at != std::string::npos) {
      const auto end = s.find(' ', at);
      o.reproduce = s.substr(at + 10, end == std::string::npos ? end : end - at - 10);
    }
  }
  return o;
}

std::vector<std::string> RunOptions::replayed() const {
  std::vector<std::string> ids;
  for (const auto& [id, r] : decode(reproduce)) ids.push_back(id);
  return ids;
}

std::vector<PropertyResult> run_property(const std::string& property, const std::string& statement,
                                         const std::vector<MinimumShare>& minimum,
                                         const std::vector<std::string>& impls,
                                         const CaseBody& body, const RunOptions& options,
                                         const std::function<std::string(uint64_t)>& describe) {
  using Status = PropertyResult::Status;
  const auto start = std::chrono::steady_clock::now();
  std::vector<PropertyResult> results(impls.size());
  for (size_t i = 0; i < impls.size(); ++i)
    results[i] = {property, statement, impls[i], Status::passed};
  for (auto& r : results) r.seed = options.seed;
  if (options.reproduce.empty() &&
      (stop_requested() ||
       (options.deadline && std::chrono::steady_clock::now() >= *options.deadline))) {
    for (auto& r : results) {
      r.status = Status::skipped;
      r.note = stop_requested() ? "not run: a signal stopped the run before it started"
                                : "not run: the time budget ran out before it started";
    }
    return results;
  }

  auto fill = [&](PropertyResult& r, const Pass& pass, size_t k) {
    r.cases = pass.tallies[k].cases;
    r.worst = pass.tallies[k].worst;
    r.bound = pass.tallies[k].bound;
    r.peers = pass.tallies[k].peers;
    r.missing = pass.tallies[k].missing;
    r.rejections = pass.tallies[k].rejections;
  };
  auto fail = [&](PropertyResult& r, const Pass& pass, size_t k) {
    fill(r, pass, k);
    r.status = Status::failed;
    const auto& v = k < pass.minimal.size() ? pass.minimal[k] : std::nullopt;
    r.failure = fmt::format("{}\nminimal counterexample:\n{}{}", statement, pass.counterexample,
                            v && !v->ok ? r.impl + ": " + v->detail : pass.message);
    r.reproduce = pass.reproduce;
    if (pass.hanging_cases >= kMaxHangingCases)
      r.cut = fmt::format(
          "shrinking stopped after {} hanging cases: the smallest hanging case found so far",
          pass.hanging_cases);
    else if (pass.cut > 0)
      r.cut = "the time budget stopped its shrinking: a smaller counterexample may exist";
  };

  // Run every pending implementation on the same cases; whoever fails is re-run alone to shrink
  // its own counterexample, and the rest run again until each has passed or failed.
  std::vector<size_t> pending(impls.size());
  for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  while (!pending.empty()) {
    const bool alone = pending.size() == 1;
    const Pass pass = run_pass(property, body, pending, options, options.shrink && alone);
    if (pass.outcome == Pass::Outcome::broken) {
      for (size_t k = 0; k < pending.size(); ++k) {
        fill(results[pending[k]], pass, k);
        results[pending[k]].status = Status::failed;
        results[pending[k]].failure = pass.trouble;
      }
      break;
    }
    if (pass.outcome == Pass::Outcome::passed) {
      const auto classes = shares(pass, minimum);
      // A run cut short saw mostly small cases (RapidCheck's sizes grow with the case count).
      const std::string thin =
          options.reproduce.empty() && pass.cut == 0 ? below_minimum(classes, pass.cases) : "";
      for (size_t k = 0; k < pending.size(); ++k) {
        PropertyResult& r = results[pending[k]];
        fill(r, pass, k);
        r.classes = classes;
        if (pass.cut > 0)
          r.cut = fmt::format("the time budget stopped it after {} of {} cases", pass.cases,
                              options.cases);
        if (r.cases == 0 && !options.reproduce.empty()) {
          r.status = Status::failed;
          r.failure = "no case ran: the reproduce value replays another property";
        } else if (r.cases == 0) {
          // Not a pass: nothing was checked. (The GoogleTest suites fail a registered
          // implementation that no case reached; a plugin may declare narrow variants.)
          r.status = Status::skipped;
          r.note = pass.cut > 0 && pass.cases == 0 ? "not run: the time budget ran out"
                   : r.rejections > 0
                       ? fmt::format(
                             "no case ran: it rejected {} of the {} generated cases, "
                             "inside what it declares",
                             r.rejections, pass.cases)
                       : fmt::format(
                             "no case ran: each of the {} generated cases needs a variant it does "
                             "not declare ({})",
                             pass.cases, describe(r.missing));
        } else if (options.reproduce.empty() && pass.cut == 0 &&
                   r.cases < minimum_cases(options.cases)) {
          // Generation inside the declared variants left it few cases: that checks too little.
          r.status = Status::failed;
          r.failure = fmt::format(
              "too few cases ({}): ran {} of {} cases, below the minimum of {}{}{}", r.cases,
              r.cases, pass.cases, minimum_cases(options.cases),
              r.missing ? "; others need variants it does not declare (" + describe(r.missing) + ")"
                        : "",
              r.rejections ? fmt::format("; it rejected {}", r.rejections) : "");
        } else if (!thin.empty()) {
          r.status = Status::failed;
          r.failure = thin;
        }
      }
      break;
    }
    std::vector<size_t> failed, rest;
    for (size_t k = 0; k < pending.size(); ++k) {
      const auto& v = k < pass.first_failure.size() ? pass.first_failure[k] : std::nullopt;
      (v && !v->ok && (!v->rejected || !options.reproduce.empty()) ? failed : rest).push_back(k);
    }
    if (failed.empty()) {  // the case failed outside Case::each: every implementation fails
      failed.swap(rest);
    }
    for (size_t k : failed) {
      if (alone || !options.shrink) {
        fail(results[pending[k]], pass, k);
        continue;
      }
      const Pass single = run_pass(property, body, {pending[k]}, options, true);
      if (single.outcome == Pass::Outcome::failed) {
        fail(results[pending[k]], single, 0);
      } else if (single.cut > 0) {  // out of time before it got there again: not shrunk
        fail(results[pending[k]], pass, k);
        results[pending[k]].cut = "the time budget left no time to shrink its counterexample";
      } else {  // nondeterministic: failed with the others, passed alone
        fail(results[pending[k]], pass, k);
        results[pending[k]].failure += "\n(the failure did not repeat when run alone)";
      }
    }
    std::vector<size_t> next;
    for (size_t k : rest) next.push_back(pending[k]);
    pending.swap(next);
  }
  // A kernel that rejected a call inside what it declares: that rejection alone, shrunk to its
  // smallest input (once per run when validate() shares rejection_shrunk).
  for (size_t i = 0; i < results.size(); ++i) {
    PropertyResult& r = results[i];
    if (r.rejections == 0 || !options.reproduce.empty()) continue;
    if (options.rejection_shrunk && !options.rejection_shrunk->insert(r.impl).second) continue;
    const Pass hunt =
        run_pass(property, body, {i}, options, options.shrink, CaseLog::Fails::rejections);
    if (hunt.outcome != Pass::Outcome::failed) continue;
    const auto& v = hunt.minimal.empty() ? std::nullopt : hunt.minimal[0];
    r.rejection = fmt::format("{}: {}\nminimal counterexample:\n{}{}", r.impl,
                              "rejected a declared-supported input", hunt.counterexample,
                              v && v->rejected ? r.impl + ": " + v->detail : hunt.message);
    r.rejection_reproduce = hunt.reproduce;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto& r : results) r.seconds = seconds;
  return results;
}

}  // namespace posenc::harness
