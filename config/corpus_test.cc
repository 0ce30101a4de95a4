// Every config in config/models against the golden frequencies golden.py computed from
// transformers' formulas in Python (fp64, math module only), independently of posenc's code.
//
// Tolerance: 4 ulp of the golden value, per frequency and for the attention factor. Both sides are
// fp64 evaluations of the same formulas with the same exponent 2i/d, but in different orders
// (posenc: base^(-2i/d) and ω/f; the golden: 1/base^(2i/d) and 1/(f·base^(2i/d))): a pow within 1
// ulp on each side and two or three more roundings apart.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <typeinfo>

#include "config/hf_config.h"
#include "posenc/error.h"
#include "reference/reference.h"

namespace posenc::config {
namespace {

constexpr double kUlps = 4;

double ulps(double got, double want) {
  return std::fabs(got - want) / (std::nextafter(want, INFINITY) - want);
}

nlohmann::json load(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::vector<std::filesystem::path> configs() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(POSENC_CONFIG_MODELS)) {
    const std::string name = entry.path().filename();
    if (name.ends_with(".json") && !name.ends_with(".golden.json")) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(Corpus, HasTheElevenModelsOfIssue20EachWithItsGolden) {
  const auto paths = configs();
  EXPECT_EQ(paths.size(), 11u);
  for (const auto& path : paths) {
    auto golden = path;
    golden.replace_extension(".golden.json");
    EXPECT_TRUE(std::filesystem::exists(golden)) << golden;
  }
}

TEST(Corpus, EveryConfigMatchesItsGoldenFrequenciesAndAttentionFactor) {
  double worst = 0;
  for (const auto& path : configs()) {
    auto golden_path = path;
    golden_path.replace_extension(".golden.json");
    const nlohmann::json golden = load(golden_path);
    for (const auto& c : golden["cases"]) {
      const int64_t seq_len = c["seq_len"];
      const std::optional<int64_t> layer =
          c["layer"].is_null() ? std::nullopt : std::optional<int64_t>(c["layer"]);
      SCOPED_TRACE(path.filename().string() + " layer " + c["layer"].dump() + " seq_len " +
                   std::to_string(seq_len));
      const ModelRope model = read(path, seq_len);
      const LayerRope& rope = model.layer(layer);
      ASSERT_EQ(rope.rotary_dim, c["rotary_dim"]);
      EXPECT_EQ(rope.base, c["base"].get<double>());
      const auto r = reference::frequencies(rope.rotary_dim, rope.base, rope.scaling);
      const auto& want = c["inv_freq"];
      ASSERT_EQ(r.inv_freq.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        const double e = ulps(r.inv_freq[i], want[i].get<double>());
        worst = std::max(worst, e);
        EXPECT_LE(e, kUlps) << "inv_freq[" << i << "] = " << r.inv_freq[i] << ", golden "
                            << want[i].get<double>();
      }
      const double e = ulps(r.attention_factor, c["attention_factor"].get<double>());
      worst = std::max(worst, e);
      EXPECT_LE(e, kUlps) << "attention_factor " << r.attention_factor;
    }
  }
  std::printf("worst error against the goldens: %g ulp (bound %g)\n", worst, kUlps);
}

// The comparison is not vacuous: the scalings that transformers' bug reports are about each move
// the frequencies or the attention factor far past the bound.
TEST(Corpus, TheGoldensSeeTheParametersThatEnginesDropped) {
  auto worst_against = [](const std::string& name, auto&& mutate) {
    const auto path = std::filesystem::path(POSENC_CONFIG_MODELS) / (name + ".json");
    const nlohmann::json golden =
        load(std::filesystem::path(path).replace_extension(".golden.json"));
    const auto& c = golden["cases"][0];
    LayerRope rope = read(path).layer(std::nullopt);
    mutate(rope);
    const auto r = reference::frequencies(rope.rotary_dim, rope.base, rope.scaling);
    double worst = ulps(r.attention_factor, c["attention_factor"].get<double>());
    for (size_t i = 0; i < r.inv_freq.size() && i < c["inv_freq"].size(); ++i)
      worst = std::max(worst, ulps(r.inv_freq[i], c["inv_freq"][i].get<double>()));
    return worst;
  };
  // GPT-OSS's truncate false (vLLM#27722), DeepSeek's mscale ratio (vLLM#48621), Phi-3's short
  // factors below L0, Llama 3's bands.
  EXPECT_GT(worst_against("gpt-oss-20b", [](LayerRope& r) { r.scaling.truncate = true; }), 1e6);
  EXPECT_GT(worst_against("deepseek-v3", [](LayerRope& r) { r.scaling.mscale_all_dim = 0; }), 1e6);
  EXPECT_GT(
      worst_against("phi-3-mini-128k-instruct", [](LayerRope& r) { r.scaling.seq_len = 131072; }),
      1e6);
  EXPECT_GT(
      worst_against("llama-3.1-8b", [](LayerRope& r) { r.scaling.kind = RopeScalingKind::linear; }),
      1e6);
  EXPECT_GT(worst_against("glm-4-9b-chat-hf", [](LayerRope& r) { r.rotary_dim = r.head_dim; }),
            1e6);
}

// Bad input is a posenc::Error, never another exception or a crash: every rope-related field of
// every corpus config, and every key of its rope dicts, replaced by values of each JSON type.
TEST(Corpus, EveryMalformedFieldIsATypedError) {
  const std::vector<nlohmann::json> values = {nullptr,
                                              "x",
                                              true,
                                              -1,
                                              0,
                                              3,
                                              0.5,
                                              1e308,
                                              -1e308,
                                              INT64_MIN,
                                              INT64_MAX,
                                              UINT64_MAX,
                                              nlohmann::json::array(),
                                              nlohmann::json::array({1, "a"}),
                                              nlohmann::json::object(),
                                              nlohmann::json::object({{"rope_type", "yarn"}})};
  int parsed = 0, rejected = 0;
  for (const auto& path : configs()) {
    const nlohmann::json original = load(path);
    // Each place a field can be: the config (or its text_config) and its rope dict.
    std::vector<std::vector<std::string>> places;
    const bool nested = original.contains("text_config");
    const std::vector<std::string> text =
        nested ? std::vector<std::string>{"text_config"} : std::vector<std::string>{};
    for (const char* key :
         {"head_dim", "hidden_size", "num_attention_heads", "qk_rope_head_dim",
          "max_position_embeddings", "original_max_position_embeddings", "rope_theta",
          "partial_rotary_factor", "rope_local_base_freq", "sliding_window_pattern",
          "num_hidden_layers", "layer_types", "rope_scaling", "rope_parameters", "text_config"}) {
      auto place = text;
      place.push_back(key);
      places.push_back(place);
    }
    auto dict = text;
    dict.push_back("rope_scaling");
    nlohmann::json::json_pointer pointer;
    for (const auto& p : dict) pointer /= p;
    if (original.contains(pointer) && original[pointer].is_object())
      for (const auto& [key, value] : original[pointer].items()) {
        auto place = dict;
        place.push_back(key);
        places.push_back(place);
      }
    for (const auto& place : places)
      for (const auto& value : values) {
        nlohmann::json config = original;
        nlohmann::json::json_pointer at;
        for (const auto& p : place) at /= p;
        config[at] = value;
        for (const std::optional<int64_t> layer :
             {std::optional<int64_t>(), std::optional<int64_t>(0)})
          try {
            const ModelRope m = parse(config.dump(), 5000);
            const LayerRope& r = m.layer(layer);
            reference::frequencies(r.rotary_dim, r.base, r.scaling);
            ++parsed;
          } catch (const Error&) {
            ++rejected;
          } catch (const std::exception& e) {
            ADD_FAILURE() << path.filename() << " " << at.to_string() << " = " << value.dump()
                          << ": " << typeid(e).name() << " " << e.what();
          }
      }
  }
  std::printf("%d malformed configs read, %d rejected with posenc::Error\n", parsed, rejected);
  EXPECT_GT(rejected, parsed);
}

}  // namespace
}  // namespace posenc::config
