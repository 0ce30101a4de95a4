// One registry entry per compiled Highway target, plus a dispatched one. A family file compiles its
// per-target kernel `Fn` for every target with hwy/foreach_target.h; in its HWY_ONCE section,
// POSENC_TARGET_TABLE(Fn) collects the compiled versions, and target_impls() turns them into
//   "<family>/optimized"      the best target this CPU supports (Highway's dynamic dispatch rule),
//   "<family>/hwy:<Target>"   exactly that target's code; unavailable on a CPU that lacks it.
// Each entry calls its target's function directly: nothing global is changed, so entries can run
// concurrently.
#pragma once

#include <hwy/highway.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "posenc/kernel.h"

namespace posenc::optimized {

// Whether this CPU can run Highway target `target` (detected once).
bool cpu_supports(int64_t target);

// A kernel's compiled versions, best target first.
template <class Fn>
class TargetTable {
 public:
  struct Entry {
    int64_t target;
    Fn* fn;  // null when the target was not compiled
  };

  TargetTable(std::initializer_list<Entry> entries) {
    for (const Entry& e : entries) {
      if (e.fn != nullptr) compiled_.push_back(e);
    }
    for (const Entry& e : compiled_) {
      if (cpu_supports(e.target)) {
        best_ = e.fn;
        break;
      }
    }
    if (best_ == nullptr)
      throw std::logic_error("posenc: no compiled Highway target runs on this CPU");
  }

  const std::vector<Entry>& compiled() const { return compiled_; }

  // The best compiled target this CPU supports (the emulated fallback always is), chosen once: a
  // decode step calls it on every call.
  Fn* best() const { return best_; }

 private:
  std::vector<Entry> compiled_;
  Fn* best_ = nullptr;
};

#if HWY_TARGETS & HWY_EMU128
#define POSENC_CHOOSE_EMU128(FN) &N_EMU128::FN
#else
#define POSENC_CHOOSE_EMU128(FN) nullptr
#endif
#if HWY_TARGETS & HWY_SCALAR
#define POSENC_CHOOSE_SCALAR(FN) &N_SCALAR::FN
#else
#define POSENC_CHOOSE_SCALAR(FN) nullptr
#endif

// Every target Highway can compile for, best first within each architecture (lower bit = better).
// Use in the namespace that holds the per-target namespaces, after foreach_target.
#define POSENC_TARGET_TABLE(FN)                                        \
  ::posenc::optimized::TargetTable<decltype(HWY_STATIC_DISPATCH(FN))>( \
      {{HWY_AVX3_DL, HWY_CHOOSE_AVX3_DL(FN)},                          \
       {HWY_AVX3, HWY_CHOOSE_AVX3(FN)},                                \
       {HWY_AVX2, HWY_CHOOSE_AVX2(FN)},                                \
       {HWY_SSE4, HWY_CHOOSE_SSE4(FN)},                                \
       {HWY_SSSE3, HWY_CHOOSE_SSSE3(FN)},                              \
       {HWY_SVE2_128, HWY_CHOOSE_SVE2_128(FN)},                        \
       {HWY_SVE_256, HWY_CHOOSE_SVE_256(FN)},                          \
       {HWY_SVE2, HWY_CHOOSE_SVE2(FN)},                                \
       {HWY_SVE, HWY_CHOOSE_SVE(FN)},                                  \
       {HWY_NEON, HWY_CHOOSE_NEON(FN)},                                \
       {HWY_RVV, HWY_CHOOSE_RVV(FN)},                                  \
       {HWY_WASM_EMU256, HWY_CHOOSE_WASM_EMU256(FN)},                  \
       {HWY_WASM, HWY_CHOOSE_WASM(FN)},                                \
       {HWY_EMU128, POSENC_CHOOSE_EMU128(FN)},                         \
       {HWY_SCALAR, POSENC_CHOOSE_SCALAR(FN)}})

// The family's entries: "<family>/optimized" first, then "<family>/hwy:<Target>" per compiled
// target, best first. `run(call, fn)` validates the call and drives target kernel `fn`.
template <class Call, class Fn>
std::vector<Impl<Call>> target_impls(const std::string& family, uint64_t variants, double bound,
                                     bool threaded, const TargetTable<Fn>& table,
                                     void (*run)(const Call&, Fn*)) {
  std::vector<Impl<Call>> impls;
  impls.push_back({.name = family + "/optimized",
                   .variants = variants,
                   .bound = bound,
                   .run = [&table, run](const Call& call) { run(call, table.best()); },
                   .threaded = threaded});
  for (const auto& e : table.compiled()) {
    const std::string name = family + "/hwy:" + hwy::TargetName(e.target);
    const int64_t target = e.target;
    Fn* fn = e.fn;
    impls.push_back({.name = name,
                     .variants = variants,
                     .bound = bound,
                     .run =
                         [name, target, fn, run](const Call& call) {
                           if (!cpu_supports(target)) {
                             throw std::runtime_error(name + ": this CPU cannot run it");
                           }
                           run(call, fn);
                         },
                     .unavailable = [target]() -> std::string {
                       if (cpu_supports(target)) return "";
                       return std::string("this CPU lacks Highway target ") +
                              hwy::TargetName(target);
                     },
                     .threaded = threaded});
  }
  return impls;
}

// For each target `table` compiled, the entry of `impls` ("<family>/hwy:<Target>") that the same
// target compiled: mrope and vision_rope hand their rotation to rope's kernel of their own target.
template <class Fn, class Call>
std::map<Fn*, const Impl<Call>*> same_target(const TargetTable<Fn>& table,
                                             const std::vector<Impl<Call>>& impls,
                                             const std::string& family) {
  std::map<Fn*, const Impl<Call>*> by_fn;
  for (const auto& e : table.compiled()) {
    const std::string name = family + "/hwy:" + hwy::TargetName(e.target);
    for (const auto& impl : impls)
      if (impl.name == name) by_fn[e.fn] = &impl;
  }
  return by_fn;
}

}  // namespace posenc::optimized
