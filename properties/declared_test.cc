// Generation inside what a kernel declares: a narrow kernel runs the profile's full case count,
// too few cases is a failure, and a skip names the variant it needed.
#include <gtest/gtest.h>

#include <cmath>

#include "properties/check.h"
#include "properties/generators.h"
#include "properties/harness.h"

namespace posenc {
namespace {

using harness::PropertyResult;

check::Options one_property(const std::string& property, uint64_t variants) {
  check::Options o;
  o.name = "narrow";
  o.variants = variants;
  o.property = property;
  o.run = harness::RunOptions{};  // CI's 200 cases from its seed
  return o;
}

const PropertyResult& only_result(const check::Result& r) {
  EXPECT_EQ(r.report.results.size(), 1u) << r.text();
  return r.report.results.front();
}

TEST(Declared, AHalfSplitCachedF32RopeRunsEveryCase) {
  const uint64_t narrow = variant::f32 | variant::rope_half_split | variant::rope_cached;
  for (const char* property : {"differential", "guard_bytes", "pair_norm"}) {
    const auto result = check::rope(reference_impl<RopeCall>().run, one_property(property, narrow));
    const PropertyResult& r = only_result(result);
    EXPECT_EQ(r.status, PropertyResult::Status::passed) << result.text();
    EXPECT_EQ(r.cases, 200) << property << "\n" << result.text();
  }
}

TEST(Declared, AnF32OnlySinusoidalRunsEveryCase) {
  const auto result = check::sinusoidal(
      reference_impl<SinusoidalCall>().run,
      one_property("differential", variant::f32 | variant::strided | variant::in_place |
                                       variant::sinusoidal_add | variant::sinusoidal_positions));
  const PropertyResult& r = only_result(result);
  EXPECT_EQ(r.status, PropertyResult::Status::passed) << result.text();
  EXPECT_EQ(r.cases, 200) << result.text();
}

TEST(Declared, ATableOnlySinusoidalAndANarrowMropeRunEveryCase) {
  const auto table = check::sinusoidal(reference_impl<SinusoidalCall>().run,
                                       one_property("differential", variant::f32));
  EXPECT_EQ(only_result(table).status, PropertyResult::Status::passed) << table.text();
  EXPECT_EQ(only_result(table).cases, 200) << table.text();
  const auto mrope =
      check::mrope(reference_impl<MropeCall>().run,
                   one_property("differential", variant::f32 | variant::mrope_half_split |
                                                    variant::mrope_sectioned |
                                                    variant::scaling_bit(RopeScalingKind::none)));
  EXPECT_EQ(only_result(mrope).status, PropertyResult::Status::passed) << mrope.text();
  EXPECT_EQ(only_result(mrope).cases, 200) << mrope.text();
}

TEST(Declared, GeneratorsDrawInsideTheScope) {
  // bf16 only, conventions declared and none accepted: finite inputs, no positions dtype but i32
  // (the generator's fallback when nothing is declared is the whole set; i32 is accepted here).
  const harness::DeclaredScope scope(
      {variant::bf16 | variant::conventions_declared | variant::positions_i32});
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(harness::gen::float_dtype()(rc::Random(i), 50).value(), DType::bf16);
    const auto layouts = harness::gen::layouts()(rc::Random(i), 50).value();
    EXPECT_FALSE(harness::any_strided(layouts));
    // Conventions: without nonfinite_inputs no ±∞ or NaN, without positions_i64 int32 only.
    EXPECT_TRUE(std::isfinite(harness::gen::f32()(rc::Random(i), 100).value()));
    EXPECT_EQ(harness::gen::position_dtype()(rc::Random(i), 50).value(), DType::i32);
  }
  const harness::DeclaredScope yarn_rounded(
      {variant::with_conventions(variant::conventions_declared | variant::positions_i64)});
  for (int i = 0; i < 50; ++i)
    EXPECT_TRUE(
        harness::gen::scaling(RopeScalingKind::yarn, 8, 10000)(rc::Random(i), 50).value().truncate);
}

// A property whose cases mostly need bf16: an f32-only kernel runs about one in ten.
harness::Property<SinusoidalCall> mostly_bf16() {
  return {.name = "sinusoidal.mostly_bf16",
          .statement = "nine cases in ten have bf16 outputs",
          .body = [](harness::Case<SinusoidalCall>& c) {
            // Not drawn through gen::float_dtype: the generator ignores what is declared.
            const bool bf16 = *rc::gen::weightedElement<bool>({{9, true}, {1, false}});
            harness::Arena arena;
            SinusoidalCall call;
            call.out = arena.alloc(bf16 ? DType::bf16 : DType::f32, {2, 4});
            c.each(call, [](const Impl<SinusoidalCall>&) { return harness::Verdict::pass(); });
          }};
}

TEST(Declared, TooFewCasesIsAFailureNamingTheMissingVariant) {
  const Impl<SinusoidalCall> narrow{.name = "sinusoidal/narrow",
                                    .variants = variant::f32,
                                    .bound = 1,
                                    .run = reference_impl<SinusoidalCall>().run};
  const auto results = harness::check(mostly_bf16(), {&narrow}, harness::RunOptions{});
  ASSERT_EQ(results.size(), 1u);
  const PropertyResult& r = results.front();
  EXPECT_EQ(r.status, PropertyResult::Status::failed);
  EXPECT_LT(r.cases, harness::minimum_cases(200));
  EXPECT_GT(r.cases, 0);
  EXPECT_TRUE(r.failure.starts_with("too few cases (" + std::to_string(r.cases) + ")"))
      << r.failure;
  EXPECT_NE(r.failure.find("below the minimum of 50"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("(bf16)"), std::string::npos) << r.failure;
}

TEST(Declared, ASkippedPropertyNamesTheVariantItNeeds) {
  const auto result = check::rope(
      reference_impl<RopeCall>().run,
      one_property("relative", variant::f32 | variant::rope_half_split | variant::rope_cached));
  const PropertyResult& r = only_result(result);
  EXPECT_EQ(r.status, PropertyResult::Status::skipped);
  EXPECT_EQ(r.note, "needs variant rope_key, not declared");
  const auto identity = check::rope(
      reference_impl<RopeCall>().run,
      one_property("identity", variant::f32 | variant::rope_half_split | variant::rope_cached));
  EXPECT_NE(only_result(identity).note.find("needs a variant it does not declare (scaling_none"),
            std::string::npos)
      << only_result(identity).note;
}

// Every bit is named from its family's own table: attention's lse, chunked, sinks and alibi bits
// were once reported as "bit 14" … "bit 17".
TEST(Declared, VariantNamesComeFromTheFamilysTable) {
  EXPECT_EQ(harness::variant_names(Family::attention, variant::f32 | variant::attention_lse |
                                                          variant::attention_chunked |
                                                          variant::attention_sinks |
                                                          variant::attention_alibi),
            "f32, attention_lse, attention_chunked, attention_sinks, attention_alibi");
  EXPECT_EQ(harness::variant_names(Family::mrope, variant::mrope_cycled |
                                                      variant::scaling_bit(RopeScalingKind::yarn) |
                                                      variant::positions_i32),
            "positions_i32, mrope_cycled, scaling_yarn");
  EXPECT_EQ(harness::variant_names(Family::absolute, variant::kFamilyVariant0), "bit 8");
}

}  // namespace
}  // namespace posenc
