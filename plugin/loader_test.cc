#include "plugin/loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "posenc/error.h"
#include "posenc/plugin.h"
#include "posenc/plugin/attention.h"
#include "properties/arena.h"
#include "properties/harness.h"
#include "properties/property.h"

namespace posenc::plugin {
namespace {

using namespace std::chrono_literals;
using harness::Arena;

std::string library(const std::string& name) {
  return std::string(POSENC_PLUGIN_DIR) + "/lib" + name + ".so";
}

std::string load_error(const std::string& path) {
  try {
    load(path, {.timeout = 2s});
  } catch (const LoadError& e) {
    return e.what();
  }
  ADD_FAILURE() << path << " loaded";
  return "";
}

void expect_load_error(const std::string& name, const std::string& message) {
  const std::string error = load_error(library(name));
  EXPECT_NE(error.find(message), std::string::npos) << error;
  EXPECT_NE(error.find(library(name)), std::string::npos) << "names the path: " << error;
}

TEST(Load, ReportsABadPath) {
  EXPECT_EQ(load_error("/no/such/plugin.so"),
            "cannot open plugin /no/such/plugin.so: No such file or directory");
}

TEST(Load, ReportsAFileThatIsNotALibrary) {
  const std::string path = testing::TempDir() + "not_a_library.so";
  std::ofstream(path) << std::string(256, 'x');
  const std::string error = load_error(path);
  EXPECT_NE(error.find("cannot load plugin " + path), std::string::npos) << error;
  EXPECT_NE(error.find("invalid ELF header"), std::string::npos) << error;
}

TEST(Load, ReportsEachMalformedLibrary) {
  expect_load_error("posenc_test_broken_no_symbol", "it does not export posenc_plugin_kernels()");
  expect_load_error("posenc_test_broken_abi",
                    "ABI version mismatch: the library was built against plugin ABI version "
                    "999, this posenc speaks version 3 (and 1 and 2)");
  expect_load_error("posenc_test_broken_null_table", "posenc_plugin_kernels() returned NULL");
  expect_load_error("posenc_test_broken_bad_family",
                    "kernel #1 family 42 is not a posenc family (0 to " +
                        std::to_string(POSENC_FAMILY_COUNT - 1) + ")");
  expect_load_error("posenc_test_broken_no_function", "kernel #1 has no function for its family");
  expect_load_error("posenc_test_broken_duplicate", "two sinusoidal kernels are named 'a'");
  expect_load_error("posenc_test_broken_bad_name",
                    "kernel #1 name 'has space' may hold only letters, digits and _ . -");
  expect_load_error("posenc_test_broken_conventions",
                    "kernel #1 conventions declare both int32 only and int64 only positions");
}

TEST(Load, SurvivesALibraryThatCrashesOrHangsWhileLoading) {
  expect_load_error("posenc_test_broken_crash", "it crashed while loading");
  expect_load_error("posenc_test_broken_constructor_crash", "it crashed while loading");
  expect_load_error("posenc_test_broken_hang", "it hung while loading: timed out after 2 s");
}

// Runs `impl` on a one-element sinusoidal call; what it wrote.
float run_one(const Impl<SinusoidalCall>& impl) {
  Arena arena;
  SinusoidalCall call;
  call.out = arena.alloc(DType::f32, {1, 2});
  impl.run(call);
  return call.out.as<float>()[0];
}

TEST(Load, ReadsAVersion2Envelope) {
  const Plugin plugin = load(library("posenc_test_envelope"), {.timeout = 2s});
  const auto& kernels = plugin.kernels<SinusoidalCall>();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].bound.of(DType::f32), 3);
  EXPECT_EQ(kernels[0].bound.of(DType::bf16), 2);
  EXPECT_EQ(kernels[0].bound.of(DType::f16), 5);
  EXPECT_EQ(kernels[0].max_position, 4096);
  // Unset low-precision bounds: version 1's rule, here bit-exact as the f32 bound is 0.
  EXPECT_EQ(kernels[1].bound.of(DType::bf16), 0);
  EXPECT_EQ(kernels[1].max_position, 0);
  EXPECT_EQ(run_one(kernels[1]), 2.0f);
}

TEST(Load, ReadsVersion3Conventions) {
  const Plugin plugin = load(library("posenc_test_envelope"), {.timeout = 2s});
  const auto& kernels = plugin.kernels<SinusoidalCall>();
  ASSERT_EQ(kernels.size(), 2u);
  // Declared restrictions become the bits of what it accepts (posenc/conventions.h).
  const uint64_t first = variant::with_conventions(kernels[0].variants);
  EXPECT_FALSE(first & variant::nonfinite_inputs);
  EXPECT_FALSE(first & variant::positions_i64);
  EXPECT_TRUE(first & variant::positions_i32);
  EXPECT_TRUE(first & variant::yarn_untruncated);
  EXPECT_EQ(harness::describe_conventions(kernels[0].variants),
            "finite inputs only (±∞ and NaN are not generated), int32 positions only");
  EXPECT_EQ(variant::with_conventions(kernels[1].variants) & variant::all_conventions,
            variant::all_conventions);
  EXPECT_EQ(harness::describe_conventions(kernels[1].variants), "");
}

TEST(Load, ReadsAVersion2TableWithItsOldMeaning) {
  // Version 2 has no conventions; its attention kernel cannot have meant the variants version 3
  // added (it never reads their argument fields), so it is not given them.
  const Plugin plugin = load(library("posenc_test_envelope_v2"), {.timeout = 2s});
  const auto& kernels = plugin.kernels<SinusoidalCall>();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].bound.of(DType::bf16), 2);
  EXPECT_EQ(kernels[0].bound.of(DType::f16), 5);
  EXPECT_EQ(kernels[0].max_position, 4096);
  // No conventions in version 2: it accepts every input.
  EXPECT_EQ(variant::with_conventions(kernels[0].variants) & variant::all_conventions,
            variant::all_conventions);
  EXPECT_EQ(run_one(kernels[0]), 1.0f);
  EXPECT_EQ(run_one(kernels[1]), 2.0f);
  const auto& attention = plugin.kernels<AttentionCall>();
  ASSERT_EQ(attention.size(), 1u);
  EXPECT_EQ(attention[0].variants & variant::attention_lse, 0u);
  EXPECT_NE(attention[0].variants & variant::attention_softcap, 0u);
  const Plugin current = load(library("posenc_test_envelope"), {.timeout = 2s});
  EXPECT_NE(current.kernels<AttentionCall>()[0].variants & variant::attention_lse, 0u);
}

TEST(Load, ReadsAVersion1TableWithItsOldMeaning) {
  const Plugin plugin = load(library("posenc_test_envelope_v1"), {.timeout = 2s});
  const auto& kernels = plugin.kernels<SinusoidalCall>();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "sinusoidal/first");
  EXPECT_EQ(kernels[1].name, "sinusoidal/second");
  EXPECT_EQ(kernels[0].bound.of(DType::f32), 3);
  EXPECT_EQ(kernels[0].bound.of(DType::bf16), kLowPrecisionBound);  // version 1's rule
  EXPECT_EQ(kernels[0].bound.of(DType::f16), kLowPrecisionBound);
  EXPECT_EQ(kernels[0].max_position, 0);
  // Each entry runs its own function: the shorter version-1 entries are indexed as such.
  EXPECT_EQ(run_one(kernels[0]), 1.0f);
  EXPECT_EQ(run_one(kernels[1]), 2.0f);
}

// What the envelope library's attention kernel read (out[0, 0, 0 ... 15], envelope.c), lse[0, 0]
// and the variants posenc gave it, on one call with every argument set to its own value.
struct Echo {
  std::vector<float> seen;
  float lse = 0;
  uint64_t variants = 0;
};
Echo run_echo(const std::string& name) {
  const Plugin plugin = load(library(name), {.timeout = 2s});
  const auto& kernels = plugin.kernels<AttentionCall>();
  EXPECT_EQ(kernels.size(), 1u) << name;
  if (kernels.size() != 1) return {};
  Arena arena;
  AttentionCall call;
  auto one = [&](DType dtype, std::vector<int64_t> shape, double value) {
    Tensor t = arena.alloc(dtype, std::move(shape));
    if (dtype == DType::i64) {
      harness::store_index(t, 0, static_cast<int64_t>(value));
    } else {
      store(t, 0, value);
    }
    return t;
  };
  call.q = one(DType::f32, {1, 1, 1}, 1.5);
  call.k = one(DType::f32, {1, 1, 1}, 2.5);
  call.v = one(DType::f32, {1, 1, 16}, 3.5);
  call.out = arena.alloc(DType::f32, {1, 1, 16});
  call.mask = Mask::causal;
  call.q_positions = one(DType::i64, {1}, 5);
  call.k_positions = one(DType::i64, {1}, 4);
  call.bias = one(DType::f32, {1, 1, 1}, 0.25);
  call.scale = 0.125;
  // A version-1 kernel is never handed a window (its bit is cleared): it is set here so that one
  // reading version 3's layout would take window_left's low half for threads.
  call.window_left = 6;
  call.softcap = 7.5;
  call.threads = 3;
  call.lse = one(DType::f32, {1, 1}, -7);  // -7 until a kernel writes it
  call.chunk_size = 9;
  call.sinks = one(DType::f32, {1}, -1.5);
  call.alibi_slopes = one(DType::f32, {1}, 0.0625);
  kernels[0].run(call);
  const float* out = call.out.as<float>();
  return {{out, out + 16}, call.lse->as<float>()[0], kernels[0].variants};
}

constexpr uint64_t kLaterThan1 = variant::attention_window | variant::attention_softcap;
constexpr uint64_t kLaterThan2 = variant::attention_lse | variant::attention_chunked |
                                 variant::attention_sinks | variant::attention_alibi;
constexpr uint64_t kVersion1Bits = variant::attention_causal | variant::attention_bias |
                                   variant::attention_gqa | variant::attention_positions;

// Each version's attention kernel reads its own struct: a version-1 one a copy in version 1's
// layout (threads right after scale), a version-2 one version 3's first part. Every field it knows
// arrives with its value, and it keeps only the variant bits its version defines.
TEST(Load, AVersion1AttentionKernelReadsVersion1sLayout) {
  const Echo v1 = run_echo("posenc_test_envelope_v1");
  const std::vector<float> want = {
      1.5,  2.5,  3.5,  16,  POSENC_MASK_CAUSAL, 5, 4, 0.25, 0.125, -100, -100, 3,
      -100, -100, -100, -100};
  EXPECT_EQ(v1.seen, want);
  EXPECT_EQ(v1.lse, -7);  // not written: version 1 has no lse
  EXPECT_EQ(v1.variants & kVersion1Bits, kVersion1Bits);
  EXPECT_EQ(v1.variants & (kLaterThan1 | kLaterThan2), 0u);
}

TEST(Load, AVersion2AttentionKernelReadsVersion3sFirstPart) {
  const Echo v2 = run_echo("posenc_test_envelope_v2");
  const std::vector<float> want = {
      1.5, 2.5, 3.5, 16, POSENC_MASK_CAUSAL, 5, 4, 0.25, 0.125, 6, 7.5, 3, -100, -100, -100, -100};
  EXPECT_EQ(v2.seen, want);
  EXPECT_EQ(v2.lse, -7);
  EXPECT_EQ(v2.variants & (kVersion1Bits | kLaterThan1), kVersion1Bits | kLaterThan1);
  EXPECT_EQ(v2.variants & kLaterThan2, 0u);
}

TEST(Load, AVersion3AttentionKernelReadsEveryField) {
  const Echo v3 = run_echo("posenc_test_envelope");
  const std::vector<float> want = {
      1.5, 2.5, 3.5, 16, POSENC_MASK_CAUSAL, 5, 4, 0.25, 0.125, 6, 7.5, 3, 1, 9, -1.5, 0.0625};
  EXPECT_EQ(v3.seen, want);
  EXPECT_EQ(v3.lse, 42);
  const uint64_t all = kVersion1Bits | kLaterThan1 | kLaterThan2;
  EXPECT_EQ(v3.variants & all, all);
}

// The faulty plugin's kernels, run on a small valid sinusoidal call.
class Faulty : public testing::Test {
 protected:
  void SetUp() override {
    call_.out = arena_.alloc(DType::f32, {3, 4});
    call_.x = arena_.alloc(DType::f32, {3, 4});
    arena_.snapshot();
  }
  const Impl<SinusoidalCall>& kernel(const std::string& name) {
    for (const auto& impl : plugin_.kernels<SinusoidalCall>())
      if (impl.name == "sinusoidal/" + name) return impl;
    throw std::runtime_error("no kernel " + name);
  }
  // The KernelFailure's message when running `name`.
  std::string failure(const std::string& name) {
    try {
      kernel(name).run(call_);
    } catch (const KernelFailure& e) {
      return e.what();
    }
    ADD_FAILURE() << name << " did not fail";
    return "";
  }

  Plugin plugin_ = load(library("posenc_test_faulty"), {.timeout = 1s});
  Arena arena_;
  SinusoidalCall call_;
};

TEST_F(Faulty, ListsItsKernels) {
  EXPECT_EQ(plugin_.size(), 13u);
  EXPECT_EQ(plugin_.kernels<SinusoidalCall>().size(), 13u);
  EXPECT_TRUE(plugin_.kernels<RopeCall>().empty());
  const auto& k = kernel("writes_out");
  EXPECT_EQ(k.variants, ~uint64_t{0});
  EXPECT_EQ(k.bound, 0);
  EXPECT_FALSE(k.threaded);
}

TEST_F(Faulty, AGoodWriteArrives) {
  kernel("writes_out").run(call_);
  EXPECT_EQ(call_.out.as<float>()[2 * 4 + 3], 2003.0f);
  EXPECT_EQ(arena_.stray_write({call_.out}), std::nullopt);
}

TEST_F(Faulty, ASegfaultIsAFailure) {
  const std::string f = failure("segfault");
  EXPECT_EQ(f.rfind("sinusoidal/segfault crashed: ", 0), 0u) << f;
  EXPECT_TRUE(f.find("SIGSEGV") != std::string::npos || f.find("SEGV") != std::string::npos) << f;
}

TEST_F(Faulty, AHangIsAFailure) {
  EXPECT_EQ(failure("hang"), "sinusoidal/hang hung: timed out after 1 s (killed)");
}

// The kernels share one worker child; one that dies takes only its own call with it.
TEST_F(Faulty, TheNextCallAfterACrashOrAHangRunsInAFreshChild) {
  for (const char* fatal : {"segfault", "hang", "exits"}) {
    failure(fatal);
    std::fill_n(call_.out.as<float>(), 3 * 4, 0.0f);
    kernel("writes_out").run(call_);
    EXPECT_EQ(call_.out.as<float>()[2 * 4 + 3], 2003.0f) << "after " << fatal;
  }
}

TEST_F(Faulty, AnAbortIsAFailureWithItsOutput) {
  const std::string f = failure("aborts");
  EXPECT_NE(f.find("sinusoidal/aborts crashed: "), std::string::npos) << f;
  EXPECT_NE(f.find("faulty: about to abort"), std::string::npos) << f;
}

TEST_F(Faulty, AnExitIsAFailure) {
  EXPECT_EQ(failure("exits"), "sinusoidal/exits crashed: exited with status 3 before returning");
}

TEST_F(Faulty, AWriteOutsideTheTensorsIsAFailureAndStaysOut) {
  EXPECT_EQ(failure("past_end"),
            "sinusoidal/past_end wrote outside its tensors: byte +0 after the end of the memory "
            "of out");
  EXPECT_EQ(failure("before_start"),
            "sinusoidal/before_start wrote outside its tensors: byte -4 before the memory of out");
  EXPECT_EQ(arena_.stray_write({call_.out}), std::nullopt);
}

TEST_F(Faulty, AWriteIntoAnInputReachesTheCallersGuards) {
  kernel("writes_input").run(call_);
  EXPECT_EQ(call_.x->as<float>()[0], 42.0f);
  EXPECT_NE(arena_.stray_write({call_.out}), std::nullopt);
}

// In a read-guarded arena x ends (or starts) at an inaccessible page; the mirror places it so in
// the child too, and the child's fault names x. Elsewhere the read lands in the mirror's slack.
TEST_F(Faulty, AReadPastAnInputFlushAgainstAGuardPageIsNamed) {
  for (auto [kernel_name, guard, expected] :
       {std::tuple{"reads_past_x", harness::ReadGuard::end, "(byte +12 after its end)"},
        std::tuple{"reads_before_x", harness::ReadGuard::start, "(byte -4 before its start)"}}) {
    Arena guarded(guard);
    SinusoidalCall call;
    call.out = guarded.alloc(DType::f32, {3, 4});
    call.x = guarded.alloc(DType::f32, {3, 4});
    std::string f;
    try {
      kernel(kernel_name).run(call);
    } catch (const KernelFailure& e) {
      f = e.what();
    }
    EXPECT_EQ(f.rfind(std::string("sinusoidal/") + kernel_name + " read outside input x " +
                          expected + " (killed by SIGSEGV",
                      0),
              0u)
        << f;
    kernel(kernel_name).run(call_);  // unguarded: the read stays in the slack
  }
}

TEST_F(Faulty, AFailureCodeCarriesItsMessage) {
  EXPECT_EQ(failure("fails"), "sinusoidal/fails failed (code 2): no GPU found");
}

TEST_F(Faulty, ARejectionIsAPosencError) {
  try {
    kernel("rejects").run(call_);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "base");
    EXPECT_EQ(e.value(), "10000");
    EXPECT_EQ(e.requirement(), "must be 10000 for this kernel");
  }
}

TEST_F(Faulty, AnUnterminatedErrorIsCutAtItsBuffers) {
  try {
    kernel("unterminated_error").run(call_);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), std::string(64, 'a'));
    EXPECT_EQ(e.value(), std::string(64, 'v'));
    EXPECT_EQ(e.requirement(), std::string(256, 'm'));
  }
}

TEST_F(Faulty, AcceptingAViewThatCouldNotBeMirroredIsAFailure) {
  call_.out.data = nullptr;  // bad input the kernel should have rejected
  EXPECT_EQ(failure("writes_input"),
            "sinusoidal/writes_input accepted views posenc could not mirror: out (null data)");
}

}  // namespace
}  // namespace posenc::plugin
