// The fuzz decoder (fuzz/decode.h) under g++: it is deterministic, plain by default, reaches
// both accepted and rejected calls (attention's windows and softcaps among them), and every
// checked-in corpus input (crash regressions included) passes `check` against the registry.
#include "fuzz/decode.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

namespace posenc::harness {
namespace {

std::vector<uint8_t> random_bytes(std::mt19937_64& rng) {
  std::vector<uint8_t> bytes(std::uniform_int_distribution<size_t>(0, 96)(rng));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

template <class Call>
bool accepted(const Call& call) {
  try {
    call.validate();
    return true;
  } catch (const Error&) {
    return false;
  }
}

template <class Call>
class Decode : public testing::Test {};
using Families = AllCalls::apply<testing::Types>;
TYPED_TEST_SUITE(Decode, Families);

TYPED_TEST(Decode, EmptyInputIsAValidCall) {
  Arena arena;
  const TypeParam call = decode<TypeParam>({}).problem.build(arena);
  EXPECT_NO_THROW(call.validate()) << describe(call);
  EXPECT_FALSE(decode<TypeParam>({}).only.has_value());
}

// Found by fuzzing the optimized kernels: a negative thread count passed validate() and the
// reference, then the optimized kernel threw. validate() now rejects it for every implementation.
TYPED_TEST(Decode, NegativeThreadsAreRejectedByValidate) {
  Arena arena;
  TypeParam call = decode<TypeParam>({}).problem.build(arena);
  call.threads = -1;
  try {
    call.validate();
    ADD_FAILURE() << "accepted threads = -1";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "threads") << e.what();
  }
}

TYPED_TEST(Decode, SameBytesGiveTheSameCall) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 300; ++i) {
    const std::vector<uint8_t> bytes = random_bytes(rng);
    const Decoded<TypeParam> d = decode<TypeParam>(bytes);
    Arena a, b;
    const TypeParam first = d.problem.build(a), second = d.problem.build(b);
    ASSERT_EQ(describe(first), describe(second));
    ASSERT_EQ(accepted(first), accepted(second)) << describe(first);
  }
}

// A decoder that only made invalid calls (or only valid ones) would fuzz half the contract.
TYPED_TEST(Decode, ReachesAcceptedAndRejectedCalls) {
  std::mt19937_64 rng(2);
  const int n = 1000;
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    Arena arena;
    ok += accepted(decode<TypeParam>(random_bytes(rng)).problem.build(arena));
  }
  EXPECT_GT(ok, n / 5) << "accepted " << ok << " of " << n;
  EXPECT_LT(ok, n - n / 20) << "accepted " << ok << " of " << n;
}

// The dtype dimension is live: random inputs reach f32, bf16 and f16 calls, and accepted ones in
// bf16 and f16 (rope_cache has no f16 table: rejected). Only inputs with bytes the builder leaves
// unread choose a dtype (inputs of up to 96 bytes: several in ten), so the floors are low.
TYPED_TEST(Decode, ReachesEveryDtype) {
  if (std::is_same_v<TypeParam, RopeFrequenciesCall>) GTEST_SKIP() << "f64 outputs only";
  std::mt19937_64 rng(3);
  std::map<DType, int> decoded, ok;
  for (int i = 0; i < 1000; ++i) {
    const Decoded<TypeParam> d = decode<TypeParam>(random_bytes(rng));
    Arena arena;
    ++decoded[d.dtype];
    ok[d.dtype] += accepted(d.problem.build(arena));
  }
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    EXPECT_GT(decoded[dtype], 30) << dtype_name(dtype);
    if (!std::is_same_v<TypeParam, RopeCacheCall> || dtype != DType::f16) {
      EXPECT_GT(ok[dtype], 5) << dtype_name(dtype);
    }
  }
}

TEST(Decode, FirstByteChoosesTheImplementations) {
  const uint8_t all[] = {0xBF, 1, 2}, third[] = {0xC2, 1, 2};
  EXPECT_FALSE(decode<AbsoluteCall>(all).only.has_value());
  EXPECT_EQ(decode<AbsoluteCall>(third).only, 2u);
}

// Every registered family has a corpus, and each input in it passes against every
// implementation, as the fuzz target's replay does.
TEST(Decode, CorpusReplaysClean) {
  for_each_family([](auto tag) {
    using Call = typename decltype(tag)::type;
    const std::filesystem::path dir =
        std::filesystem::path(POSENC_CORPUS_DIR) / family_name(Call::kFamily);
    int inputs = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::ifstream file(entry.path(), std::ios::binary);
      const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(file), {}};
      const auto failure = check(decode<Call>(bytes));
      EXPECT_FALSE(failure.has_value()) << entry.path() << ": " << *failure;
      ++inputs;
    }
    EXPECT_GT(inputs, 0) << "no corpus in " << dir;
  });
}

// The dtype is decoded last, from bytes no other choice reads: the crash regressions, written when
// every call was f32, still decode to f32 calls; and every family with float activations has bf16
// and f16 seeds.
TEST(Decode, CorpusKeepsRegressionsF32AndSeedsEveryDtype) {
  for_each_family([](auto tag) {
    using Call = typename decltype(tag)::type;
    const std::filesystem::path dir =
        std::filesystem::path(POSENC_CORPUS_DIR) / family_name(Call::kFamily);
    std::map<DType, int> seeds;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::ifstream file(entry.path(), std::ios::binary);
      const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(file), {}};
      const DType dtype = decode<Call>(bytes).dtype;
      ++seeds[dtype];
      if (entry.path().filename().string().starts_with("regression-")) {
        EXPECT_EQ(dtype, DType::f32) << entry.path();
      }
    }
    if (Call::kFamily == Family::rope_frequencies) return;  // f64 outputs only
    EXPECT_GT(seeds[DType::bf16], 0) << "no bf16 seed in " << dir;
    EXPECT_GT(seeds[DType::f16], 0) << "no f16 seed in " << dir;
  });
}

// What an attention input exercises of the window and the softcap (issue 21): accepted with
// each, at the window's inclusive bound (window_left = tk − 1: every implicit distance, and with
// causal the key at exactly that distance), and rejected naming each.
struct AttentionReach {
  int window = 0, window_at_bound = 0, softcap = 0, both = 0, bad_window = 0, bad_softcap = 0;
  std::map<DType, int> window_dtypes, softcap_dtypes;

  void add(std::span<const uint8_t> bytes) {
    const Decoded<AttentionCall> d = decode<AttentionCall>(bytes);
    Arena arena;
    const AttentionCall c = d.problem.build(arena);
    try {
      c.validate();
    } catch (const Error& e) {
      bad_window += e.argument() == "window_left";
      bad_softcap += e.argument() == "softcap";
      return;
    }
    window += c.windowed();
    window_at_bound += c.windowed() && c.window_left == c.k.shape[0] - 1;
    softcap += c.softcap > 0;
    both += c.windowed() && c.softcap > 0;
    if (c.windowed()) ++window_dtypes[d.dtype];
    if (c.softcap > 0) ++softcap_dtypes[d.dtype];
  }
};

TEST(Decode, AttentionReachesWindowsAndSoftcaps) {
  std::mt19937_64 rng(4);
  AttentionReach reach;
  for (int i = 0; i < 2000; ++i) reach.add(random_bytes(rng));
  EXPECT_GT(reach.window, 20);
  EXPECT_GT(reach.window_at_bound, 2);
  EXPECT_GT(reach.softcap, 20);
  EXPECT_GT(reach.bad_window, 2);
  EXPECT_GT(reach.bad_softcap, 2);
}

// Its corpus seeds both, in every dtype, and both rejections, so that the CI campaign starts there.
TEST(Decode, AttentionCorpusSeedsWindowsAndSoftcaps) {
  AttentionReach reach;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(POSENC_CORPUS_DIR) / "attention")) {
    std::ifstream file(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(file), {}};
    reach.add(bytes);
  }
  EXPECT_GT(reach.window_at_bound, 0);
  EXPECT_GT(reach.both, 0);
  EXPECT_GT(reach.bad_window, 0);
  EXPECT_GT(reach.bad_softcap, 0);
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    EXPECT_GT(reach.window_dtypes[dtype], 0) << "no windowed seed in " << dtype_name(dtype);
    EXPECT_GT(reach.softcap_dtypes[dtype], 0) << "no softcapped seed in " << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace posenc::harness
