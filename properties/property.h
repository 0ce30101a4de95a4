// Properties: named checks over kernel handles (Impl<Call>), run by RapidCheck, usable from
// GoogleTest and from `posenc validate` alike. A property's body generates one case and checks it
// against every implementation under test at once (sharing the generated problem and the
// reference's result); an implementation that fails is then re-run alone, so that RapidCheck
// shrinks toward its own minimal counterexample and prints a reproduce string for it.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "posenc/conventions.h"
#include "posenc/error.h"
#include "posenc/kernel.h"
#include "posenc/mrope.h"
#include "posenc/properties/arena.h"
#include "posenc/properties/compare.h"
#include "posenc/registry.h"
#include "posenc/rope.h"

namespace posenc::harness {

// What a group of implementations under test declares. The generators draw inside it (every
// family's dtypes, strides and positions; rope's layouts, caches, scalings, keys, …), so that a
// narrow kernel runs the profile's full case count instead of the part of the family's stream it
// happens to support. check() runs each group of implementations declaring the same under its own
// DeclaredScope; outside one, and for implementations declaring everything (the built-in ones),
// it is everything and the generators draw exactly as they always did.
struct Declared {
  uint64_t variants = ~uint64_t{0};  // with its conventions spelled out (variant::with_conventions)

  bool has(uint64_t bits) const { return (variants & bits) == bits; }
  bool has_any(uint64_t bits) const { return (variants & bits) != 0; }
  bool operator==(const Declared&) const = default;
};
// The declaration generators draw inside of, on this thread.
const Declared& declared();
class DeclaredScope {
 public:
  explicit DeclaredScope(const Declared& declared);
  ~DeclaredScope();
  DeclaredScope(const DeclaredScope&) = delete;
  DeclaredScope& operator=(const DeclaredScope&) = delete;

 private:
  Declared saved_;
};

// "rope_cached, scaling_yarn": the names of variant bits of `family` (posenc::variant's, the
// plugin ABI's POSENC_VARIANT_<NAME> in upper case; the conventions' as posenc/conventions.h).
std::string variant_names(Family family, uint64_t bits);
// "finite inputs only (±∞ and NaN are not generated), …": the conventions `variants` restricts
// the inputs to, "" when it accepts them all.
std::string describe_conventions(uint64_t variants);

// The conventions (posenc/conventions.h) a call needs: its positions' dtype, an ±∞ or NaN in a
// float input, YaRN's truncate = false.
template <class Call>
uint64_t convention_needs(const Call& call) {
  uint64_t bits = 0;
  for_each_view(call, [&](const auto& field, const Tensor& t) {
    if (field.is_output()) return;
    if (t.dtype == DType::i32) {
      bits |= variant::positions_i32;
    } else if (t.dtype == DType::i64) {
      bits |= variant::positions_i64;
    } else if (is_float(t.dtype) && t.data != nullptr && !(bits & variant::nonfinite_inputs)) {
      for_each_offset(t, [&](int64_t off) {
        if (!std::isfinite(load(t, off))) bits |= variant::nonfinite_inputs;
      });
    }
  });
  if constexpr (requires { call.scaling.truncate; })
    if (call.scaling.kind == RopeScalingKind::yarn && !call.scaling.truncate)
      bits |= variant::yarn_untruncated;
  return bits;
}

// The variant and convention bits `call` needs that `variants` lacks.
template <class Call>
uint64_t missing_variants(const Call& call, uint64_t variants) {
  const uint64_t accepted = variant::with_conventions(variants);
  uint64_t missing = call.required_variants() & ~accepted;
  if (~accepted & variant::all_conventions) missing |= convention_needs(call) & ~accepted;
  return missing;
}

// What one implementation did on one generated case.
struct Verdict {
  bool ok = true;
  double worst = 0;                  // largest error, in the property's tolerance units
  double bound = 0;                  // what the property allows, same units
  std::string detail;                // when failed: where, expected, got, error and bound
  PeerExcess peers = kNoPeerExcess;  // against the peers' tolerances (compare.h)
  // It raised posenc::Error on a call inside what it declares. Not this property's failure (the
  // shrinker would steer every property into it): the runner reports it once, on its own.
  bool rejected = false;

  static Verdict pass() { return {}; }
  static Verdict fail(std::string detail) { return {false, 0, 0, std::move(detail)}; }
  static Verdict rejection(const Error& e) {
    Verdict v = fail(std::string("rejected a declared-supported input: ") + e.what());
    v.rejected = true;
    return v;
  }
  // From a comparison; `what` names the checked relation ("R(a)∘R(b) vs R(a+b)").
  static Verdict of(const Comparison& c, const std::string& what = "");
};

// Asks every running property to stop generating and shrinking cases, as if its deadline had
// passed (async-signal-safe: `posenc validate` calls it on SIGINT and SIGTERM).
void request_stop() noexcept;
bool stop_requested() noexcept;

// Records the verdicts of one case's implementations. The runner owns it; Case writes to it.
class CaseLog {
 public:
  void begin(size_t implementations);
  void record(size_t impl, Verdict verdict);
  // The implementation sat out a call needing `missing`, variant bits it does not declare.
  void sat_out(size_t impl, uint64_t missing) { missing_[impl] |= missing; }
  // This case was not run (the time budget ran out): it neither counts nor fails.
  void skip() { skipped_ = true; }
  bool skipped() const { return skipped_; }
  // Throws RapidCheck's failure, naming each failed implementation, when any verdict failed.
  void finish(const std::vector<std::string>& names) const;
  // Which verdicts fail a case: all but rejections (Verdict::rejected: a property's own run),
  // rejections only (the run that shrinks one), or both (a replay).
  enum class Fails : uint8_t { checks, rejections, both };
  void set_fails(Fails fails) { fails_ = fails; }
  bool fails(const Verdict& v) const {
    return !v.ok && (fails_ == Fails::both || v.rejected == (fails_ == Fails::rejections));
  }
  const std::vector<std::optional<Verdict>>& verdicts() const { return verdicts_; }
  const std::vector<uint64_t>& missing() const { return missing_; }

 private:
  std::vector<std::optional<Verdict>> verdicts_;
  std::vector<uint64_t> missing_;
  bool skipped_ = false;
  Fails fails_ = Fails::checks;
};

// One generated case, seen by a property's body.
template <class Call>
class Case {
 public:
  Case(const std::vector<const Impl<Call>*>& impls, const std::vector<std::string>& names,
       CaseLog& log)
      : names_(names), log_(log) {
    log_.begin(impls.size());
    for (const Impl<Call>* impl : impls) impls_.push_back(declared_only(*impl));
  }

  // Runs check(impl) → Verdict for every implementation under test, then fails the case if any
  // verdict failed. An exception from check is that implementation's failure. An implementation
  // that is handed a call needing a variant it does not declare sits this case out: a property
  // may run several calls per case (a cached and an on-the-fly one, both layouts, …).
  template <class Check>
  void each(Check&& check) {
    if (stopped()) return;
    for (size_t i = 0; i < impls_.size(); ++i)
      if (auto verdict = guarded(check, i)) log_.record(i, std::move(*verdict));
    log_.finish(names_);
  }
  // The same, for the implementations that declare every variant `call` needs.
  template <class Check>
  void each(const Call& call, Check&& check) {
    if (stopped()) return;
    for (size_t i = 0; i < impls_.size(); ++i) {
      if (const uint64_t missing = missing_variants(call, impls_[i].variants))
        log_.sat_out(i, missing);
      else if (auto verdict = guarded(check, i))
        log_.record(i, std::move(*verdict));
    }
    log_.finish(names_);
  }

 private:
  struct Unsupported {
    uint64_t missing;
  };

  // After SIGINT or SIGTERM the rest of a case is not run (a plugin's call may take its timeout).
  bool stopped() {
    if (stop_requested()) log_.skip();
    return log_.skipped();
  }

  // `impl`, whose run refuses (throws Unsupported for) a call needing an undeclared variant.
  static Impl<Call> declared_only(const Impl<Call>& impl) {
    Impl<Call> copy = impl;
    copy.run = [run = impl.run, variants = impl.variants](const Call& call) {
      if (const uint64_t missing = missing_variants(call, variants)) throw Unsupported{missing};
      run(call);
    };
    return copy;
  }

  template <class Check>
  std::optional<Verdict> guarded(Check& check, size_t i) {
    try {
      return check(impls_[i]);
    } catch (const Unsupported& u) {
      log_.sat_out(i, u.missing);
      return std::nullopt;
    } catch (const Error& e) {
      return Verdict::rejection(e);
    } catch (const std::exception& e) {
      return Verdict::fail(std::string("threw: ") + e.what());
    }
  }

  std::vector<Impl<Call>> impls_;
  const std::vector<std::string>& names_;
  CaseLog& log_;
};

// One model's rope parameters (`posenc validate --config`, from config/hf_config.h). While a
// property runs with RunOptions::pinned set, the rope families' generators (rope_frequencies,
// rope_cache, rope, mrope) take these instead of generating them; shapes, positions below
// max_position and values are still generated.
struct PinnedRope {
  std::string label;  // which config and layer, for the reports
  int64_t head_dim = 2, rotary_dim = 2;
  RopeLayout layout = RopeLayout::half_split;
  double base = 10000;
  RopeScaling scaling;
  int64_t max_position = 0;  // max_position_embeddings; 0: the config has none (kMaxPosition)
  std::optional<std::array<int64_t, 3>> mrope_section;  // M-RoPE models only
  MropeConvention mrope_convention = MropeConvention::sectioned;

  double attention_factor() const;  // the reference's, from base and scaling
  // The largest position a generator may produce where it would go up to `cap`: below
  // max_position_embeddings.
  int64_t position_cap(int64_t cap) const;
  std::string describe() const;  // "rotary_dim=128 head_dim=128 half_split base=500000 llama3(...)"
};

// The pin of the property running now (check() sets it from RunOptions::pinned), or null.
const PinnedRope* pinned_rope();
// A generator's position bound `cap`, lowered to the pin's when one is set.
int64_t pinned_position_cap(int64_t cap);
// Property::unpinnable of a property that needs the attention factor 1 (a product of rotations
// scales by f², not f): the reason when the model's factor is not 1.
std::string needs_unit_factor(const PinnedRope& pin);
// Whether a class tag only says which parameters a case drew (a scaling kind, "tail", "partial",
// "long positions", ...): its minimum share cannot apply when the parameters are pinned.
bool is_parameter_class(const std::string& tag);

// An input class that must reach a share of the generated cases (RC_CLASSIFY / RC_TAG names).
// A class that needs variants is not required of implementations that do not declare them (the
// generators then never draw it): `needs` all of its bits, `needs_any` one of them. The classes of
// the bits every family shares ("f32", "bf16", "f16", "strided", "in place") need theirs without
// saying so.
struct MinimumShare {
  std::string tag;
  double share;
  uint64_t needs = 0, needs_any = 0;
};

template <class Call>
struct Property {
  std::string name;       // "<family>.<property>", e.g. "rope.pair_norm"
  std::string statement;  // what holds, in one line
  std::function<void(Case<Call>&)> body;
  uint64_t needs = 0;           // variant bits an implementation must declare
  bool needs_threads = false;   // only for implementations that honour Call::threads
  bool skip_reference = false;  // compares against the reference: says nothing about it
  std::vector<MinimumShare> minimum;
  // Under a pin (RunOptions::pinned): why this property cannot run at those parameters (it varies
  // one of them, or needs a value the model does not have), "" when it can; null: it always can.
  std::function<std::string(const PinnedRope&)> unpinnable;
};

// How many cases, from which seed; or one case to replay.
struct RunOptions {
  uint64_t seed = 0x5eed2024;  // CI's fixed seed
  int cases = 200;
  std::string reproduce;  // a reproduce value printed by a failure: replays that one case
  bool shrink = true;
  std::string profile = "ci";
  // The rope families' parameters fixed to one model's (PinnedRope); none: generated.
  std::optional<PinnedRope> pinned;
  // Past this instant no further case runs: generation stops short of `cases` and shrinking stops
  // at the smallest counterexample found so far (the result says which). None by default.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // The implementations whose rejection of a declared-supported input a property has shrunk
  // already (validate() shares one set over its properties: a rejection is reported once); null:
  // each property shrinks its own.
  std::shared_ptr<std::set<std::string>> rejection_shrunk;

  // CI profile by default; POSENC_PROFILE=nightly runs 20× the cases from a random seed. RC_PARAMS
  // (RapidCheck's own variable) may set seed=, max_success= and reproduce=.
  static RunOptions from_environment();
  // Property names the reproduce value replays (empty if none or if it does not decode).
  std::vector<std::string> replayed() const;
};

struct ClassShare {
  std::string tag;
  double share = 0;    // of the cases run
  double minimum = 0;  // 0 when none is required
};

// One property's outcome for one implementation.
struct PropertyResult {
  enum class Status : uint8_t { passed, failed, skipped };
  std::string property, statement, impl;
  Status status = Status::passed;
  int64_t cases = 0;
  double worst = 0, bound = 0;       // tolerance units
  PeerExcess peers = kNoPeerExcess;  // the worst over its cases against the peers' tolerances
  std::string failure;               // why: the minimal counterexample and the failed check
  std::string reproduce;  // replays the failure: RC_PARAMS="reproduce=…" or --reproduce '…'
  std::string note;       // why skipped
  std::string cut;        // what the time budget cut short, if anything
  std::string replay;     // a one-line command that replays `reproduce`, set by the caller
  uint64_t seed = 0;
  std::vector<ClassShare> classes;
  double seconds = 0;
  uint64_t missing = 0;  // variant bits that cases it sat out needed and it does not declare
  // Cases on which it raised posenc::Error inside what it declares (not counted in `cases`), and
  // the first such rejection shrunk: its minimal input and the kernel's message, with `reproduce`
  // for it in rejection_reproduce ("" when another property of this run shrank one already).
  int64_t rejections = 0;
  std::string rejection, rejection_reproduce;

  bool failed() const { return status == Status::failed; }
};

// Fewer cases than this (of `cases` asked for; 50 of the CI profile's 200) and a property is
// "too few cases (N)", a failure, never a pass: a quarter of the profile's count.
constexpr int64_t minimum_cases(int64_t cases) { return (cases + 3) / 4; }

// Sets pinned_rope() for its lifetime.
class PinScope {
 public:
  explicit PinScope(const std::optional<PinnedRope>& pin);
  ~PinScope();
  PinScope(const PinScope&) = delete;
  PinScope& operator=(const PinScope&) = delete;

 private:
  const PinnedRope* previous_;
};

// The type-erased runner behind check(): `body(active, log)` runs one case for the implementations
// whose indices are in `active`; `describe` names variant bits (variant_names of the family).
using CaseBody = std::function<void(const std::vector<size_t>& active, CaseLog& log)>;
std::vector<PropertyResult> run_property(const std::string& property, const std::string& statement,
                                         const std::vector<MinimumShare>& minimum,
                                         const std::vector<std::string>& impls,
                                         const CaseBody& body, const RunOptions& options,
                                         const std::function<std::string(uint64_t)>& describe);

// Checks `property` for each implementation; returns one result per implementation, in order.
// Implementations that declare the same run together on the same cases, generated inside what
// they declare (Declared); each other declaration gets its own run.
template <class Call>
std::vector<PropertyResult> check(const Property<Call>& property,
                                  const std::vector<const Impl<Call>*>& impls,
                                  const RunOptions& options) {
  std::vector<PropertyResult> results(impls.size());
  std::vector<std::pair<Declared, std::vector<size_t>>> groups;
  for (size_t i = 0; i < impls.size(); ++i) {
    const Impl<Call>& impl = *impls[i];
    std::string skip = impl.unavailable_reason();
    if (skip.empty() && property.skip_reference && impl.name == reference_impl<Call>().name)
      skip = "is the reference";
    if (skip.empty() && property.needs_threads && !impl.threaded) skip = "single-threaded";
    if (skip.empty() && (property.needs & ~impl.variants))
      skip = "needs variant " + variant_names(Call::kFamily, property.needs & ~impl.variants) +
             ", not declared";
    if (skip.empty() && options.pinned && property.unpinnable)
      skip = property.unpinnable(*options.pinned);
    if (!skip.empty()) {
      results[i] = {property.name, property.statement, impl.name, PropertyResult::Status::skipped};
      results[i].note = skip;
      continue;
    }
    const Declared declaration{variant::with_conventions(impl.variants)};
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == declaration; });
    if (group == groups.end()) {
      groups.emplace_back(declaration, std::vector<size_t>{});
      group = groups.end() - 1;
    }
    group->second.push_back(i);
  }
  const auto describe = [](uint64_t bits) { return variant_names(Call::kFamily, bits); };
  // Under a pin the classes that only say which parameters a case drew cannot apply.
  std::vector<MinimumShare> minimum;
  for (const MinimumShare& m : property.minimum)
    if (!options.pinned || !is_parameter_class(m.tag)) minimum.push_back(m);
  const PinScope pin(options.pinned);
  for (const auto& [declaration, where] : groups) {
    std::vector<const Impl<Call>*> tested;
    std::vector<std::string> names;
    for (size_t i : where) {
      tested.push_back(impls[i]);
      names.push_back(impls[i]->name);
    }
    const CaseBody body = [&](const std::vector<size_t>& active, CaseLog& log) {
      std::vector<const Impl<Call>*> subset;
      std::vector<std::string> subset_names;
      for (size_t i : active) {
        subset.push_back(tested[i]);
        subset_names.push_back(names[i]);
      }
      Case<Call> c(subset, subset_names, log);
      property.body(c);
    };
    const DeclaredScope scope(declaration);
    auto ran =
        run_property(property.name, property.statement, minimum, names, body, options, describe);
    for (size_t k = 0; k < where.size(); ++k) results[where[k]] = std::move(ran[k]);
  }
  return results;
}

// Every property of a family, generic ones first (defined in properties/<family>.cc).
template <class Call>
std::vector<Property<Call>> properties();

// A failure as a kernel author reads it: property, implementation, cases, seed, the minimal
// counterexample with the failed check, and `replay`, a one-line command that replays it.
std::string failure_report(const PropertyResult& result, const std::string& replay);
// "long positions 23% (≥ 15%), tail 41% (≥ 30%), …"
std::string describe_classes(const std::vector<ClassShare>& classes);

// Throws RapidCheck's case failure with `message` (for checks outside Case::each).
[[noreturn]] void fail_case(const std::string& message);

}  // namespace posenc::harness
