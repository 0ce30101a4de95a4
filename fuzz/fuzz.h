// What every fuzz target does with one input: decode it into a problem of its family and check
// it against every registered implementation (fuzz/decode.h). Any failure aborts, so
// libFuzzer records the input as a crash; sanitizer reports abort on their own.
//
// POSENC_FUZZ_VERBOSE=1 prints each implementation and call before it runs; an AddressSanitizer
// report names them by itself.
//
// POSENC_FUZZ_BROKEN=1 adds a deliberately broken implementation to the family's registry list,
// for the self-check that the target finds it (fuzz/CMakeLists.txt).
//
// POSENC_FUZZ_SERIAL=1 runs every threaded call's parts in order on one thread (same partition,
// same bits), so that coverage and hence the whole campaign depend only on the input and the seed:
// CI's fixed-run campaigns set it, with POSENC_NUM_THREADS pinning the default thread count.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "fuzz/decode.h"
#include "optimized/thread_pool.h"

namespace posenc::fuzz {

inline std::string& program() {
  static std::string name = "<fuzz target>";
  return name;
}

// "<impl> on <call>" of the implementation running now.
inline std::string& running() {
  static std::string now;
  return now;
}

inline void on_run(const std::string& what) {
  running() = what;
  static const bool verbose = std::getenv("POSENC_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "==posenc fuzz== running %s\n", what.c_str());
}

// A POSENC_FUZZ_* switch: unset or "0" is off, "1" is on; anything else stops the target, since a
// typo would silently change what the campaign runs.
inline bool switch_on(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || std::string(value) == "0") return false;
  if (std::string(value) == "1") return true;
  std::fprintf(stderr, "==posenc fuzz== %s=%s: must be 0 or 1\n", name, value);
  std::exit(2);
}

inline void after_sanitizer_report(const char*) {
  std::fprintf(stderr, "\n==posenc fuzz== while running %s\n", running().c_str());
}

}  // namespace posenc::fuzz

// Present when AddressSanitizer is linked in (weak: other sanitizers' builds link too).
extern "C" __attribute__((weak)) void __asan_set_error_report_callback(void (*)(const char*));

namespace posenc::fuzz {

// The reference with a tail bug: when an output of at least 8 elements has a number of rows that
// leaves 3 after blocks of 4, it also stores one element past the output's last element, as a
// tail loop that rounds up would.
template <class Call>
Impl<Call> broken_tail() {
  const Impl<Call>& reference = reference_impl<Call>();
  return {.name = std::string(family_name(Call::kFamily)) + "/broken-tail",
          .variants = reference.variants,
          .bound = reference.bound,
          .run = [](const Call& call) {
            reference_impl<Call>().run(call);
            for (const Tensor& out : harness::outputs(call)) {
              const int inner = out.rank - 1;
              if (out.rank < 1 || out.numel() < 8 || out.shape[0] % 4 != 3) continue;
              int64_t last = 0;
              for (int d = 0; d < out.rank; ++d) last += (out.shape[d] - 1) * out.strides[d];
              store(out, last + out.strides[inner], 0.0);
            }
          }};
}

template <class Call>
const std::vector<Impl<Call>>& impls() {
  static const std::vector<Impl<Call>> list = [] {
    std::vector<Impl<Call>> l = implementations<Call>();
    if (switch_on("POSENC_FUZZ_BROKEN")) l.push_back(broken_tail<Call>());
    return l;
  }();
  return list;
}

template <class Call>
int run(const uint8_t* data, size_t size) {
  std::optional<std::string> failure;
  try {
    failure = harness::check(harness::decode<Call>({data, size}), impls<Call>(), on_run);
  } catch (const std::exception& e) {
    failure = std::string("uncaught exception: ") + e.what();
  }
  if (failure) {
    std::fprintf(stderr,
                 "\n==posenc fuzz== FAIL %s\n==posenc fuzz== reproduce: %s <crash file> "
                 "(libFuzzer names it below)\n",
                 failure->c_str(), program().c_str());
    std::abort();
  }
  return 0;
}

}  // namespace posenc::fuzz

// The libFuzzer entry points of a target for Call.
#define POSENC_FUZZ_TARGET(Call)                                                  \
  extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {                  \
    if (*argc > 0) posenc::fuzz::program() = (*argv)[0];                          \
    posenc::optimized::set_serial(posenc::fuzz::switch_on("POSENC_FUZZ_SERIAL")); \
    if (__asan_set_error_report_callback)                                         \
      __asan_set_error_report_callback(posenc::fuzz::after_sanitizer_report);     \
    return 0;                                                                     \
  }                                                                               \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {       \
    return posenc::fuzz::run<posenc::Call>(data, size);                           \
  }
