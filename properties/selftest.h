// The harness tests itself: in-tree broken kernels, each a realistic bug, registered as Impl
// entries the way plugins are (never in the main registry). The self-test runs every property of a
// family over them and asserts that each is caught by the property designed to catch it, and that
// every property catches at least one of them.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "posenc/registry.h"
#include "properties/harness.h"

namespace posenc::harness {

template <class Call>
struct Broken {
  Impl<Call> impl;        // named "<family>/broken:<bug>"
  std::string bug;        // what is wrong, in one line
  std::string caught_by;  // the property designed to catch it
};

// A broken kernel "<family>/broken:<name>" that runs `with(bug, call)` and states `bound`.
template <class Call, class Bug>
Impl<Call> broken_kernel(const char* name, Bug bug, void (*with)(Bug, const Call&), double bound,
                         bool threaded = false) {
  return {.name = std::string(family_name(Call::kFamily)) + "/broken:" + name,
          .variants = kAllVariants,
          .bound = bound,
          .run = [bug, with](const Call& call) { with(bug, call); },
          .unavailable = nullptr,
          .threaded = threaded};
}

// Defined in properties/<family>_broken.cc, beside the family's properties.
template <class Call>
std::vector<Broken<Call>> broken_implementations();

// Generic properties with no realistic bug in this family (e.g. thread nondeterminism in a pure
// lookup), each with the property instance in another family whose broken kernel fails it.
template <class Call>
std::vector<std::pair<std::string, std::string>> killed_elsewhere();

// ---- Bugs any family can have, as wrappers around its reference; add_generic() adds them. ----

// A vector store of the last block runs one element past the end of the first output.
template <class Call>
Impl<Call> stray_write(const std::string& family) {
  return {family + "/broken:stray_write", kAllVariants, 1, [](const Call& call) {
            reference_impl<Call>().run(call);
            const Tensor out = outputs(call).front();
            if (out.numel() == 0) return;
            int64_t last = 0;
            for (int d = 0; d < out.rank; ++d) last += (out.shape[d] - 1) * out.strides[d];
            store(out, last + 1, 0.0);
          }};
}

// Indexes every tensor as if it were row-major contiguous, whatever its strides.
template <class Call>
Impl<Call> ignores_strides(const std::string& family) {
  return {family + "/broken:ignores_strides", kAllVariants, 1, [](const Call& call) {
            Call flat = call;
            for (Tensor* t : views(flat)) {
              if (t == nullptr) continue;
              int64_t stride = 1;
              for (int d = t->rank - 1; d >= 0; --d) {
                t->strides[d] = stride;
                stride *= t->shape[d];
              }
            }
            reference_impl<Call>().run(flat);
          }};
}

// Clears its first output element (an accumulator, say) before validating the call.
template <class Call>
Impl<Call> writes_before_validating(const std::string& family) {
  return {family + "/broken:writes_before_validating", kAllVariants, 1, [](const Call& call) {
            for (const Tensor& out : outputs(call))
              if (out.data != nullptr && is_float(out.dtype))
                std::memset(out.data, 0, dtype_size(out.dtype));
            reference_impl<Call>().run(call);
          }};
}

// Writes correct outputs, but reads one byte just past the end (`before`: just before the start) of
// its first input, as a SIMD tail that loads a whole vector does (XNNPACK marks its own
// XNN_OOB_READS).
template <class Call>
Impl<Call> reads_outside_input(const std::string& family, bool before) {
  return {family + (before ? "/broken:reads_before_input" : "/broken:reads_past_input"),
          kAllVariants, 1, [before](const Call& call) {
            reference_impl<Call>().run(call);
            bool done = false;
            for_each_view(call, [&](const auto& field, const Tensor& t) {
              if (done || field.is_output() || t.numel() == 0) return;
              int64_t last = 0;
              for (int d = 0; d < t.rank; ++d) last += (t.shape[d] - 1) * t.strides[d];
              const auto* bytes = static_cast<const volatile uint8_t*>(t.data);
              const int64_t at =
                  before ? -1 : (last + 1) * static_cast<int64_t>(dtype_size(t.dtype));
              (void)bytes[at];
              done = true;
            });
          }};
}

template <class Call>
void add_generic(std::vector<Broken<Call>>& list, const std::string& family) {
  list.push_back({stray_write<Call>(family), "writes one element past the end of its output",
                  family + ".guard_bytes"});
  list.push_back({ignores_strides<Call>(family), "ignores strides: assumes contiguous tensors",
                  family + ".layouts"});
  const auto table = Call::view_table();
  if (std::any_of(table.begin(), table.end(), [](const auto& f) { return !f.is_output(); })) {
    list.push_back({reads_outside_input<Call>(family, false),
                    "reads a byte past the end of its first input", family + ".guard_bytes"});
    list.push_back({reads_outside_input<Call>(family, true),
                    "reads a byte before the start of its first input", family + ".guard_bytes"});
  }
  list.push_back({writes_before_validating<Call>(family),
                  "writes its output before validating the call", family + ".bad_input"});
}

}  // namespace posenc::harness
