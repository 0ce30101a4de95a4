#include "config/hf_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "posenc/error.h"

namespace posenc::config {
namespace {

// The Error parse() raises, or a failure when it raises none.
Error error_of(const std::string& json) {
  try {
    parse(json);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << json;
  return Error("", "", "");
}

const char* kLlama =
    R"({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
        "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";

TEST(Parse, ReadsLlama3IntoTheCallParameters) {
  const ModelRope m = parse(kLlama);
  const LayerRope& r = m.layer(std::nullopt);
  EXPECT_EQ(r.rotary_dim, 128);
  EXPECT_EQ(r.base, 500000.0);
  EXPECT_EQ(r.scaling.kind, RopeScalingKind::llama3);
  EXPECT_EQ(r.scaling.factor, 8.0);
  EXPECT_EQ(r.scaling.original_max_position, 8192);
  const RopeCall call = r.rope_call();
  EXPECT_EQ(call.rotary_dim, 128);
  EXPECT_EQ(call.layout, RopeLayout::half_split);
  EXPECT_EQ(call.scaling.high_freq_factor, 4.0);
  EXPECT_EQ(r.frequencies_call().base, 500000.0);
}

TEST(Parse, AnUnknownScalingKeyIsAnErrorNamingIt) {
  const Error e = error_of(
      R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2, "fator": 4}})");
  EXPECT_EQ(e.argument(), "rope_scaling.fator");
  EXPECT_EQ(e.value(), "4");
}

TEST(Parse, AKeyItsRopeTypeDoesNotReadIsAnError) {
  // transformers' linear ignores attention_factor (a warning); dynamic no longer reads
  // original_max_position_embeddings; default reads no scaling key at all.
  EXPECT_EQ(error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2,
                         "attention_factor": 1.5}})")
                .argument(),
            "rope_scaling.attention_factor");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "max_position_embeddings": 4096, "rope_scaling":
                         {"type": "dynamic", "factor": 2, "original_max_position_embeddings": 4096}})")
                .argument(),
            "rope_scaling.original_max_position_embeddings");
  EXPECT_EQ(
      error_of(R"({"head_dim": 64, "rope_parameters": {"rope_type": "default", "factor": 2}})")
          .argument(),
      "rope_parameters.factor");
}

TEST(Parse, UnknownRopeTypesAndMissingRequiredKeysAreErrors) {
  EXPECT_EQ(
      error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "proportional"}})").argument(),
      "rope_scaling.rope_type");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "rope_scaling": {"type": "su", "short_factor": []}})")
                .argument(),
            "rope_scaling.type");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear"}})").argument(),
            "rope_scaling.factor");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "max_position_embeddings": 8192, "rope_scaling":
                         {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1}})")
                .argument(),
            "rope_scaling.high_freq_factor");
}

TEST(Parse, WrongJsonTypesAreErrors) {
  EXPECT_EQ(error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": "8"}})")
                .argument(),
            "rope_scaling.factor");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "max_position_embeddings": 8192, "rope_scaling":
                         {"rope_type": "yarn", "factor": 4, "truncate": 0}})")
                .argument(),
            "rope_scaling.truncate");
  EXPECT_EQ(error_of(R"({"head_dim": 64.5})").argument(), "config.head_dim");
  EXPECT_EQ(error_of("{not json").argument(), "config");
  EXPECT_EQ(error_of(R"({"hidden_size": 64})").argument(), "config.head_dim");
}

TEST(Parse, TwoSpellingsOfOneParameterMustAgree) {
  EXPECT_EQ(error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "type": "dynamic",
                         "factor": 2}})")
                .argument(),
            "rope_scaling.type");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2},
                         "rope_parameters": {"rope_type": "linear", "factor": 2}})")
                .argument(),
            "rope_scaling");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "partial_rotary_factor": 0.5,
                         "rope_parameters": {"partial_rotary_factor": 0.25}})")
                .argument(),
            "rope_parameters.partial_rotary_factor");
  // Phi-3 keeps original_max_position_embeddings outside the dict; transformers prefers that one.
  EXPECT_EQ(error_of(R"({"head_dim": 64, "max_position_embeddings": 131072,
                         "original_max_position_embeddings": 4096, "rope_scaling":
                         {"rope_type": "yarn", "factor": 32, "original_max_position_embeddings": 8192}})")
                .argument(),
            "rope_scaling.original_max_position_embeddings");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "rope_theta": 10000,
                         "rope_parameters": {"rope_type": "default", "rope_theta": 500000}})")
                .argument(),
            "rope_parameters.rope_theta");
}

TEST(Parse, RopeKeysBesideATextConfigMustRepeatIt) {
  EXPECT_EQ(parse(R"({"rope_theta": 1e6, "text_config": {"head_dim": 64, "rope_theta": 1e6}})")
                .layer(std::nullopt)
                .base,
            1e6);
  EXPECT_EQ(error_of(R"({"rope_theta": 1e4, "text_config": {"head_dim": 64, "rope_theta": 1e6}})")
                .argument(),
            "config.rope_theta");
  EXPECT_EQ(error_of(R"({"rope_scaling": {"type": "mrope", "mrope_section": [16, 8, 8]},
                         "text_config": {"head_dim": 64}})")
                .argument(),
            "config.rope_scaling");
  // Qwen2-VL's legacy "mrope" beside a rope_type other than default: versions disagree.
  EXPECT_EQ(error_of(R"({"head_dim": 64, "max_position_embeddings": 8192, "rope_scaling":
                         {"type": "mrope", "rope_type": "yarn", "factor": 2}})")
                .argument(),
            "rope_scaling.type");
}

TEST(Parse, BadValuesAreTheContractsErrorsPrefixedWithTheirDict) {
  const Error e =
      error_of(R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 0.01}})");
  EXPECT_EQ(e.argument(), "rope_scaling: scaling.factor");
  EXPECT_EQ(error_of(R"({"head_dim": 3})").argument(), "rope_scaling: rotary_dim");
}

TEST(Parse, YarnDefaultsFollowTransformers) {
  // A null factor is max_position_embeddings / L0; beta 0 or null is the default; L0 defaults to
  // max_position_embeddings; mscale alone does not count.
  const ModelRope m = parse(R"({"head_dim": 64, "max_position_embeddings": 16384, "rope_scaling":
      {"rope_type": "yarn", "factor": null, "beta_fast": 0, "beta_slow": null, "mscale": 0.7,
       "original_max_position_embeddings": 4096}})");
  const RopeScaling& s = m.layer(std::nullopt).scaling;
  EXPECT_EQ(s.factor, 4.0);
  EXPECT_EQ(s.beta_fast, 32.0);
  EXPECT_EQ(s.beta_slow, 1.0);
  EXPECT_EQ(s.mscale, 0.7);
  EXPECT_EQ(s.mscale_all_dim, 0.0);
  EXPECT_TRUE(s.truncate);
  EXPECT_TRUE(std::isnan(s.attention_factor));
  EXPECT_EQ(parse(R"({"head_dim": 64, "max_position_embeddings": 8192, "rope_scaling":
      {"rope_type": "yarn", "factor": 2, "attention_factor": 1.25}})")
                .layer(std::nullopt)
                .scaling.original_max_position,
            8192);
}

TEST(Parse, DeepSeekRopesItsOwnHeadDimInterleavedAndNotesItsSoftmaxScale) {
  const ModelRope m = parse(R"({"model_type": "deepseek_v3", "hidden_size": 7168,
      "num_attention_heads": 128, "qk_rope_head_dim": 64, "max_position_embeddings": 163840,
      "rope_scaling": {"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
      "original_max_position_embeddings": 4096}})");
  const LayerRope& r = m.layer(std::nullopt);
  EXPECT_EQ(r.rotary_dim, 64);
  EXPECT_EQ(r.layout, RopeLayout::interleaved);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("softmax scale"), std::string::npos);
}

TEST(Parse, MropeSectionsAreReported) {
  const ModelRope m = parse(R"({"text_config": {"head_dim": 128, "rope_scaling":
      {"mrope_interleaved": true, "mrope_section": [24, 20, 20], "rope_type": "default"}}})");
  const LayerRope& r = m.layer(std::nullopt);
  EXPECT_EQ(r.mrope_section, (std::vector<int64_t>{24, 20, 20}));
  EXPECT_TRUE(r.mrope_interleaved);
  EXPECT_EQ(r.source, "text_config.rope_scaling");
  EXPECT_EQ(r.scaling.kind, RopeScalingKind::none);
  EXPECT_EQ(
      parse(
          R"({"head_dim": 128, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}})")
          .layer(std::nullopt)
          .rope_type,
      "default");
}

const char* kGemma = R"({"text_config": {"head_dim": 256, "num_hidden_layers": 12,
    "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "sliding_window_pattern": 6,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}})";

TEST(Parse, GemmaSlidingLayersRunUnscaledAtTheLocalBase) {
  const ModelRope m = parse(kGemma);
  EXPECT_EQ(m.num_layers, 12);
  const LayerRope& sliding = m.layer(0);
  EXPECT_EQ(sliding.layer_type, "sliding_attention");
  EXPECT_EQ(sliding.base, 10000.0);
  EXPECT_EQ(sliding.scaling.kind, RopeScalingKind::none);
  for (int64_t global : {5, 11}) {
    const LayerRope& full = m.layer(global);
    EXPECT_EQ(full.layer_type, "full_attention");
    EXPECT_EQ(full.base, 1000000.0);
    EXPECT_EQ(full.scaling.kind, RopeScalingKind::linear);
  }
  EXPECT_EQ(&m.layer(4), &sliding);
  EXPECT_THROW(m.layer(12), Error);
  try {
    m.layer(std::nullopt);
    FAIL() << "a model whose layers differ needs a layer";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "layer");
    EXPECT_NE(e.requirement().find("full_attention on layers 5,11"), std::string::npos) << e.what();
  }
}

TEST(Parse, PerLayerDictsFollowLayerTypes) {
  const ModelRope m = parse(R"({"head_dim": 64, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
      "layer_types": ["sliding_attention", "full_attention"],
      "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0},
                          "sliding_attention": {"rope_type": "default"}}})");
  EXPECT_EQ(m.layer(0).base, 1e4);
  EXPECT_EQ(m.layer(1).base, 1e6);
  EXPECT_EQ(m.layer(1).source, "rope_parameters.full_attention");
  EXPECT_EQ(error_of(R"({"head_dim": 64, "layer_types": ["full_attention"], "rope_parameters":
      {"full_attention": {"rope_type": "default"}, "sliding_attention": {"rope_type": "default"}}})")
                .argument(),
            "rope_parameters.sliding_attention");
}

TEST(Parse, LongropeSwitchesAtL0AndDerivesItsFactor) {
  std::string factors = "[1, 1, 1, 1]";
  const std::string config = R"({"head_dim": 8, "max_position_embeddings": 131072,
      "original_max_position_embeddings": 4096, "rope_scaling": {"type": "longrope",
      "short_factor": )" + factors +
                             R"(, "long_factor": [2, 2, 2, 2]}})";
  const RopeScaling s = parse(config, 5000).layer(std::nullopt).scaling;
  EXPECT_EQ(s.factor, 32.0);
  EXPECT_EQ(s.original_max_position, 4096);
  EXPECT_EQ(s.seq_len, 5000);
  EXPECT_EQ(s.long_factor, (std::vector<double>{2, 2, 2, 2}));
}

TEST(Parse, PhiThreesLegacyTypesAreLongrope) {
  for (const char* type : {"su", "yarn"}) {
    const std::string config = std::string(R"({"model_type": "phi3", "head_dim": 4,
        "max_position_embeddings": 8192, "original_max_position_embeddings": 4096,
        "rope_scaling": {"short_factor": [1, 1], "long_factor": [2, 2], "type": ")") +
                               type + R"("}})";
    EXPECT_EQ(parse(config).layer(std::nullopt).scaling.kind, RopeScalingKind::longrope) << type;
  }
}

}  // namespace
}  // namespace posenc::config
