// Golden numbers for the rope frequencies of every scaling, and bad input. Each golden test names
// its source. "HF test" = huggingface/transformers tests/utils/test_modeling_rope_utils.py (its
// numerical snapshots, printed to 5 significant digits, computed in float32). "python3" = computed
// for this test with plain python3 float64 math (no torch/numpy), following the named source
// function line by line; the script's formulas are the source's, not this repository's.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::expect_rejected;
using reference::frequencies;
using K = RopeScalingKind;

// HF's snapshots print x.xxxxe±yy: half a unit in the last digit, plus float32's own rounding.
void expect_five_digits(const std::vector<double>& got, const std::vector<double>& printed) {
  ASSERT_EQ(got.size(), printed.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double unit = std::pow(10.0, std::floor(std::log10(std::fabs(printed[i]))) - 4);
    EXPECT_NEAR(got[i], printed[i], 0.5 * unit + 1e-6 * std::fabs(printed[i])) << "i = " << i;
  }
}

// python3 float64 values: equal up to a few ulps (pow vs 1/x**y, operation order).
void expect_float64(const std::vector<double>& got,
                    const std::vector<std::pair<int, double>>& want) {
  for (auto [i, v] : want) EXPECT_NEAR(got[i], v, 1e-13 * std::fabs(v)) << "i = " << i;
}

// LlamaConfig() defaults used by the HF tests: head_dim 4096/32 = 128, rope_theta 10000,
// max_position_embeddings 2048.
constexpr int64_t kD = 128;
constexpr double kBase = 10000;

// HF test_default_rope_numerically.
const std::vector<double> kHfDefault = {
    1.0000e+00, 8.6596e-01, 7.4989e-01, 6.4938e-01, 5.6234e-01, 4.8697e-01, 4.2170e-01, 3.6517e-01,
    3.1623e-01, 2.7384e-01, 2.3714e-01, 2.0535e-01, 1.7783e-01, 1.5399e-01, 1.3335e-01, 1.1548e-01,
    1.0000e-01, 8.6596e-02, 7.4989e-02, 6.4938e-02, 5.6234e-02, 4.8697e-02, 4.2170e-02, 3.6517e-02,
    3.1623e-02, 2.7384e-02, 2.3714e-02, 2.0535e-02, 1.7783e-02, 1.5399e-02, 1.3335e-02, 1.1548e-02,
    1.0000e-02, 8.6596e-03, 7.4989e-03, 6.4938e-03, 5.6234e-03, 4.8697e-03, 4.2170e-03, 3.6517e-03,
    3.1623e-03, 2.7384e-03, 2.3714e-03, 2.0535e-03, 1.7783e-03, 1.5399e-03, 1.3335e-03, 1.1548e-03,
    1.0000e-03, 8.6596e-04, 7.4989e-04, 6.4938e-04, 5.6234e-04, 4.8697e-04, 4.2170e-04, 3.6517e-04,
    3.1623e-04, 2.7384e-04, 2.3714e-04, 2.0535e-04, 1.7783e-04, 1.5399e-04, 1.3335e-04, 1.1548e-04};

TEST(RopeFrequencies, NoneMatchesHfSnapshot) {
  const auto r = frequencies(kD, kBase, {});
  expect_five_digits(r.inv_freq, kHfDefault);
  EXPECT_EQ(r.attention_factor, 1.0);
}

// HF test_linear_rope_numerically: default / factor, attention scale 1.
TEST(RopeFrequencies, LinearDividesByTheFactor) {
  const auto plain = frequencies(kD, kBase, {});
  for (double factor : {2.0, 10.0, 20.0}) {
    const auto r = frequencies(kD, kBase, {.kind = K::linear, .factor = factor});
    for (int64_t i = 0; i < kD / 2; ++i)
      EXPECT_DOUBLE_EQ(r.inv_freq[i], plain.inv_freq[i] / factor);
    EXPECT_EQ(r.attention_factor, 1.0);
  }
}

// vLLM DynamicNTKAlphaRotaryEmbedding._compute_cos_sin_cache: base' = base·α^(d/(d−2)); α = 1000,
// d = 128, base 10000. python3. The lowest frequency is divided by exactly α.
TEST(RopeFrequencies, NtkAlphaMatchesVllmFormula) {
  const auto plain = frequencies(kD, kBase, {});
  const auto r = frequencies(kD, kBase, {.kind = K::ntk, .alpha = 1000});
  expect_float64(r.inv_freq, {{0, 1},
                              {1, 0.77603436304697437},
                              {16, 0.017301957388458945},
                              {32, 0.00029935772947204905},
                              {48, 5.1794746792312132e-06},
                              {63, 1.1547819846894587e-07}});
  EXPECT_NEAR(r.inv_freq[63], plain.inv_freq[63] / 1000, 1e-13 * plain.inv_freq[63]);
  EXPECT_EQ(r.attention_factor, 1.0);
}

// HF test_dynamic_rope_numerically: factor 10, max_position_embeddings 2048, seq_len 16384; and
// no change while seq_len ≤ max_position_embeddings.
TEST(RopeFrequencies, DynamicNtkMatchesHfSnapshot) {
  const std::vector<double> expected = {
      1.0000e+00, 8.0931e-01, 6.5498e-01, 5.3008e-01, 4.2900e-01, 3.4720e-01, 2.8099e-01,
      2.2741e-01, 1.8404e-01, 1.4895e-01, 1.2055e-01, 9.7558e-02, 7.8955e-02, 6.3899e-02,
      5.1714e-02, 4.1853e-02, 3.3872e-02, 2.7413e-02, 2.2185e-02, 1.7955e-02, 1.4531e-02,
      1.1760e-02, 9.5176e-03, 7.7027e-03, 6.2339e-03, 5.0451e-03, 4.0831e-03, 3.3045e-03,
      2.6744e-03, 2.1644e-03, 1.7517e-03, 1.4176e-03, 1.1473e-03, 9.2852e-04, 7.5146e-04,
      6.0817e-04, 4.9220e-04, 3.9834e-04, 3.2238e-04, 2.6091e-04, 2.1115e-04, 1.7089e-04,
      1.3830e-04, 1.1193e-04, 9.0585e-05, 7.3312e-05, 5.9332e-05, 4.8018e-05, 3.8861e-05,
      3.1451e-05, 2.5453e-05, 2.0600e-05, 1.6672e-05, 1.3492e-05, 1.0920e-05, 8.8374e-06,
      7.1522e-06, 5.7883e-06, 4.6845e-06, 3.7912e-06, 3.0683e-06, 2.4832e-06, 2.0097e-06,
      1.6265e-06};
  RopeScaling s{.kind = K::dynamic_ntk, .factor = 10, .max_position = 2048, .seq_len = 16384};
  const auto r = frequencies(kD, kBase, s);
  expect_five_digits(r.inv_freq, expected);
  EXPECT_EQ(r.attention_factor, 1.0);
  for (int64_t short_len : {0, 1, 2048}) {
    s.seq_len = short_len;
    EXPECT_EQ(frequencies(kD, kBase, s).inv_freq, frequencies(kD, kBase, {}).inv_freq);
  }
}

// HF test_yarn_rope_numerically: factor 10, beta 32/1, d 128, base 10000; that HF version took
// L₀ = max_position_embeddings = 2048. Attention factor 0.1·ln f + 1, or the explicit one.
TEST(RopeFrequencies, YarnMatchesHfSnapshot) {
  const std::vector<double> expected = {
      1.0000e+00, 8.6596e-01, 7.4989e-01, 6.4938e-01, 5.6234e-01, 4.8697e-01, 4.2170e-01,
      3.6517e-01, 3.1623e-01, 2.7384e-01, 2.3714e-01, 2.0535e-01, 1.7783e-01, 1.5399e-01,
      1.3335e-01, 1.1548e-01, 1.0000e-01, 8.3479e-02, 6.9590e-02, 5.7925e-02, 4.8136e-02,
      3.9931e-02, 3.3061e-02, 2.7315e-02, 2.2515e-02, 1.8512e-02, 1.5177e-02, 1.2403e-02,
      1.0101e-02, 8.1924e-03, 6.6143e-03, 5.3120e-03, 4.2400e-03, 3.3599e-03, 2.6396e-03,
      2.0520e-03, 1.5746e-03, 1.1882e-03, 8.7713e-04, 6.2810e-04, 4.3007e-04, 2.7384e-04,
      2.3714e-04, 2.0535e-04, 1.7783e-04, 1.5399e-04, 1.3335e-04, 1.1548e-04, 1.0000e-04,
      8.6596e-05, 7.4989e-05, 6.4938e-05, 5.6234e-05, 4.8697e-05, 4.2170e-05, 3.6517e-05,
      3.1623e-05, 2.7384e-05, 2.3714e-05, 2.0535e-05, 1.7783e-05, 1.5399e-05, 1.3335e-05,
      1.1548e-05};
  RopeScaling s{.kind = K::yarn, .factor = 10, .original_max_position = 2048};
  expect_five_digits(frequencies(kD, kBase, s).inv_freq, expected);
  for (double factor : {2.0, 10.0, 20.0}) {
    s.factor = factor;
    EXPECT_DOUBLE_EQ(frequencies(kD, kBase, s).attention_factor, 0.1 * std::log(factor) + 1.0);
    s.attention_factor = 0.5;
    EXPECT_EQ(frequencies(kD, kBase, s).attention_factor, 0.5);
    s.attention_factor = std::nan("");
  }
}

// DeepSeek-V3 config.json (qk_rope_head_dim 64, rope_theta 10000, yarn factor 40,
// original_max_position_embeddings 4096, beta 32/1, mscale = mscale_all_dim = 1): HF
// _compute_yarn_parameters, python3. Correction range [10, 23]; the ratio of equal mscales is 1.
TEST(RopeFrequencies, YarnDeepSeekV3) {
  RopeScaling s{.kind = K::yarn,
                .factor = 40,
                .original_max_position = 4096,
                .mscale = 1.0,
                .mscale_all_dim = 1.0};
  const auto r = frequencies(64, 10000, s);
  expect_float64(r.inv_freq, {{0, 1},
                              {10, 0.056234132519034905},   // lo: still ω
                              {11, 0.039006926567143857},   // ramp starts
                              {16, 0.0054999999999999997},  // (ω/40 + ω)/2 at the ramp's middle
                              {22, 0.00017782794100389219},
                              {23, 3.3338035804083099e-05},  // hi: ω/40
                              {31, 3.3338035804083101e-06}});
  EXPECT_EQ(r.attention_factor, 1.0);
  // mscale ≠ mscale_all_dim: g(40, 1)/g(40, 0.8) = (0.1·ln 40 + 1)/(0.08·ln 40 + 1), python3.
  s.mscale_all_dim = 0.8;
  EXPECT_NEAR(frequencies(64, 10000, s).attention_factor, 1.0569662567531275, 1e-15);
  // Only one of the two set: HF ignores it and takes g(f, 1).
  s.mscale_all_dim = 0;
  EXPECT_DOUBLE_EQ(frequencies(64, 10000, s).attention_factor, 0.1 * std::log(40.0) + 1);
}

// GPT-OSS (HF GptOssConfig defaults: head_dim 64, rope_theta 150000, yarn factor 32, beta 32/1,
// truncate false, original_max_position_embeddings 4096): HF _compute_yarn_parameters, python3.
// Without truncation the range is [8.0928, 17.398], so no pair sits exactly on either end.
TEST(RopeFrequencies, YarnGptOssWithoutTruncation) {
  const RopeScaling s{
      .kind = K::yarn, .factor = 32, .original_max_position = 4096, .truncate = false};
  const auto r = frequencies(64, 150000, s);
  expect_float64(r.inv_freq, {{0, 1},
                              {8, 0.050813274815461475},
                              {9, 0.031705696184663769},
                              {13, 0.0038603593171920685},
                              {17, 0.00012931870124506317},
                              {18, 3.8308812373753384e-05},
                              {31, 3.0235114281192144e-07}});
  EXPECT_NEAR(r.attention_factor, 1.3465735902799727, 1e-15);  // 0.1·ln 32 + 1
}

// Qwen2.5 / Qwen3 long-context recipe (yarn factor 4, original_max_position_embeddings 32768,
// rope_theta 1e6, head_dim 128): HF _compute_yarn_parameters after PR #40320, python3.
TEST(RopeFrequencies, YarnQwen) {
  const RopeScaling s{.kind = K::yarn, .factor = 4, .original_max_position = 32768};
  const auto r = frequencies(128, 1e6, s);
  expect_float64(r.inv_freq, {{23, 0.0069783058485986633},
                              {24, 0.0053753214907901019},
                              {32, 0.00060294117647058821},
                              {40, 4.4456985250973067e-05},
                              {63, 3.1023444018792988e-07}});
  EXPECT_NEAR(r.attention_factor, 1.138629436111989, 1e-15);  // 0.1·ln 4 + 1
}

// Every source clamps hi to d − 1 although the ramp runs over the d/2 pair indices: with a long
// L₀ and a small base hi lies past the last pair, which then is not fully interpolated. d 128,
// base 10000, factor 4, L₀ 131072: range [45, 70]. HF _compute_yarn_parameters, python3.
TEST(RopeFrequencies, YarnRangeIsClampedToTheDimNotThePairs) {
  const RopeScaling s{.kind = K::yarn, .factor = 4, .original_max_position = 131072};
  const auto r = frequencies(kD, kBase, s);
  expect_float64(
      r.inv_freq,
      {{60, 9.7805367552140758e-05}, {62, 6.5342550176002872e-05}, {63, 5.3119971295715086e-05}});
  const auto plain = frequencies(kD, kBase, {});
  EXPECT_GT(r.inv_freq[63], 1.5 * plain.inv_freq[63] / 4);  // far from ω/4
}

// HF test_llama3_rope_numerically: factor 10, low 1, high 4, original 2048, d 128, base 10000.
TEST(RopeFrequencies, Llama3MatchesHfSnapshot) {
  const std::vector<double> expected = {
      1.0000e+00, 8.6596e-01, 7.4989e-01, 6.4938e-01, 5.6234e-01, 4.8697e-01, 4.2170e-01,
      3.6517e-01, 3.1623e-01, 2.7384e-01, 2.3714e-01, 2.0535e-01, 1.7783e-01, 1.5399e-01,
      1.3335e-01, 1.1548e-01, 1.0000e-01, 8.6596e-02, 7.4989e-02, 6.4938e-02, 5.6234e-02,
      4.8697e-02, 4.2170e-02, 3.6517e-02, 3.1623e-02, 2.7384e-02, 2.3714e-02, 2.0535e-02,
      1.7783e-02, 1.5399e-02, 1.3335e-02, 1.0730e-02, 7.7785e-03, 5.6009e-03, 3.9991e-03,
      2.8248e-03, 1.9675e-03, 1.3449e-03, 8.9549e-04, 5.7363e-04, 3.4539e-04, 2.7384e-04,
      2.3714e-04, 2.0535e-04, 1.7783e-04, 1.5399e-04, 1.3335e-04, 1.1548e-04, 1.0000e-04,
      8.6596e-05, 7.4989e-05, 6.4938e-05, 5.6234e-05, 4.8697e-05, 4.2170e-05, 3.6517e-05,
      3.1623e-05, 2.7384e-05, 2.3714e-05, 2.0535e-05, 1.7783e-05, 1.5399e-05, 1.3335e-05,
      1.1548e-05};
  const RopeScaling s{
      .kind = K::llama3, .factor = 10, .original_max_position = 2048, .low_freq_factor = 1};
  const auto r = frequencies(kD, kBase, s);
  expect_five_digits(r.inv_freq, expected);
  EXPECT_EQ(r.attention_factor, 1.0);
}

// Llama 3.1 defaults (factor 8, low 1, high 4, original 8192, rope_theta 500000, d 128): HF
// _compute_llama3_parameters, python3. Pairs 0–28 keep ω (λ < 2048), 29–35 are smoothed, 36–63
// are ω/8 (λ > 8192).
TEST(RopeFrequencies, Llama31Defaults) {
  const RopeScaling s{.kind = K::llama3, .factor = 8, .original_max_position = 8192};
  const auto plain = frequencies(128, 500000, {});
  const auto r = frequencies(128, 500000, s);
  expect_float64(r.inv_freq, {{0, 1},
                              {28, 0.0032114459947525913},
                              {29, 0.0021665707635033591},
                              {32, 0.00052484616099295468},
                              {35, 9.5562123539646833e-05},
                              {36, 7.7846552739324498e-05},
                              {63, 3.0689259889145111e-07}});
  for (int i : {0, 10, 28}) EXPECT_EQ(r.inv_freq[i], plain.inv_freq[i]);
  for (int i : {36, 50, 63}) EXPECT_DOUBLE_EQ(r.inv_freq[i], plain.inv_freq[i] / 8);
  EXPECT_EQ(r.attention_factor, 1.0);
}

// HF test_longrope_rope_numerically: short_factor = [2]·64, long_factor = [1, 2, …, 64] on the
// default frequencies; attention factor √(1 + ln f / ln L₀) with L₀ = 2048, or the explicit one.
// Recent HF chooses the long factors when seq_len > L₀.
TEST(RopeFrequencies, LongRopeMatchesHfTest) {
  RopeScaling s{.kind = K::longrope, .original_max_position = 2048};
  for (int i = 0; i < kD / 2; ++i) {
    s.short_factor.push_back(2.0);
    s.long_factor.push_back(i + 1.0);
  }
  const auto plain = frequencies(kD, kBase, {});
  for (double factor : {2.0, 10.0, 20.0}) {
    s.factor = factor;
    EXPECT_DOUBLE_EQ(frequencies(kD, kBase, s).attention_factor,
                     std::sqrt(1 + std::log(factor) / std::log(2048.0)));
  }
  s.factor = 1;
  EXPECT_EQ(frequencies(kD, kBase, s).attention_factor, 1.0);
  for (int64_t seq_len : {0, 2048}) {
    s.seq_len = seq_len;
    const auto r = frequencies(kD, kBase, s);
    for (int i = 0; i < kD / 2; ++i) EXPECT_DOUBLE_EQ(r.inv_freq[i], plain.inv_freq[i] / 2);
  }
  s.seq_len = 2049;
  const auto r = frequencies(kD, kBase, s);
  for (int i = 0; i < kD / 2; ++i) EXPECT_DOUBLE_EQ(r.inv_freq[i], plain.inv_freq[i] / (i + 1));
  s.attention_factor = 0.5;
  EXPECT_EQ(frequencies(kD, kBase, s).attention_factor, 0.5);
}

// Phi-3-mini-128k (head_dim 96, original 4096 → 131072, so f = 32): HF and vLLM's attention
// factor √(1 + ln 32 / ln 4096) = √(17/12).
TEST(RopeFrequencies, LongRopePhi3AttentionFactor) {
  RopeScaling s{.kind = K::longrope, .factor = 32, .original_max_position = 4096};
  s.short_factor.assign(48, 1.0);
  s.long_factor.assign(48, 1.0);
  EXPECT_NEAR(frequencies(96, 10000, s).attention_factor, std::sqrt(17.0 / 12.0), 1e-15);
}

// The registered kernel writes exactly what frequencies() returns, through strided views.
TEST(RopeFrequencies, KernelStoresTheFrequencies) {
  const RopeScaling s{.kind = K::yarn, .factor = 40, .original_max_position = 4096};
  std::vector<double> inv_freq(64, -1), factor(1);
  reference::rope_frequencies({.rotary_dim = 64,
                               .base = 10000,
                               .scaling = s,
                               .inv_freq = view(inv_freq.data(), DType::f64, {32}, {2}),
                               .attention_factor = view(factor.data(), DType::f64, {1})});
  const auto r = frequencies(64, 10000, s);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(inv_freq[2 * i], r.inv_freq[i]);
    EXPECT_EQ(inv_freq[2 * i + 1], -1);  // the gaps stay untouched
  }
  EXPECT_EQ(factor[0], r.attention_factor);
}

class RopeFrequenciesBadInput : public ::testing::Test {
 protected:
  RopeFrequenciesBadInput() {
    call.rotary_dim = 8;
    call.inv_freq = arena.alloc(DType::f64, {4});
    call.attention_factor = arena.alloc(DType::f64, {1});
  }
  void expect(const std::string& argument) {
    expect_rejected(reference::rope_frequencies, call, arena, argument);
  }
  Arena arena;
  RopeFrequenciesCall call;
};

TEST_F(RopeFrequenciesBadInput, OddRotaryDim) {
  call.rotary_dim = 7;
  expect("rotary_dim");
}
TEST_F(RopeFrequenciesBadInput, ZeroRotaryDim) {
  call.rotary_dim = 0;
  expect("rotary_dim");
}
TEST_F(RopeFrequenciesBadInput, NonFiniteBase) {
  call.base = NAN;
  expect("base");
}
TEST_F(RopeFrequenciesBadInput, NonPositiveBase) {
  call.base = -10000;
  expect("base");
}
TEST_F(RopeFrequenciesBadInput, NonFiniteFactor) {
  call.scaling = {.kind = K::linear, .factor = INFINITY};
  expect("scaling.factor");
}
TEST_F(RopeFrequenciesBadInput, NonPositiveFactor) {
  call.scaling = {.kind = K::llama3, .factor = 0, .original_max_position = 8192};
  expect("scaling.factor");
}
TEST_F(RopeFrequenciesBadInput, NonPositiveAlpha) {
  call.scaling = {.kind = K::ntk, .alpha = -2};
  expect("scaling.alpha");
}
TEST_F(RopeFrequenciesBadInput, YarnBetaFastNotAboveBetaSlow) {
  call.scaling = {
      .kind = K::yarn, .factor = 4, .original_max_position = 4096, .beta_fast = 1, .beta_slow = 1};
  expect("scaling.beta_fast");
}
TEST_F(RopeFrequenciesBadInput, LongRopeFactorsOfTheWrongLength) {
  call.scaling = {.kind = K::longrope, .factor = 32, .original_max_position = 4096};
  call.scaling.short_factor.assign(4, 1.0);
  call.scaling.long_factor.assign(5, 1.0);
  expect("scaling.long_factor.size");
}
TEST_F(RopeFrequenciesBadInput, Llama3HighNotAboveLow) {
  call.scaling = {.kind = K::llama3,
                  .factor = 8,
                  .original_max_position = 8192,
                  .low_freq_factor = 4,
                  .high_freq_factor = 4};
  expect("scaling.high_freq_factor");
}
TEST_F(RopeFrequenciesBadInput, OutputOfTheWrongSize) {
  call.inv_freq = arena.alloc(DType::f64, {5});
  expect("inv_freq.shape[0]");
}
TEST_F(RopeFrequenciesBadInput, OutputsOverlap) {
  call.attention_factor = view(call.inv_freq.as<double>() + 3, DType::f64, {1});
  expect("inv_freq.data");
}

}  // namespace
}  // namespace posenc
