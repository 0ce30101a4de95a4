// M-RoPE's axis assignment, pinned to the public implementations' patterns (mrope.h), and its
// section checks: each error names the argument.
#include "posenc/mrope.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "posenc/error.h"

namespace posenc {
namespace {

std::string pattern(MropeConvention convention, std::array<int64_t, 3> section) {
  std::string s;
  for (int64_t i = 0; i < section[0] + section[1] + section[2]; ++i)
    s += "THW"[mrope_axis(convention, section, i)];
  return s;
}

TEST(Mrope, SectionedIsContiguousBandsAsQwen2VL) {
  EXPECT_EQ(pattern(MropeConvention::sectioned, {16, 24, 24}),
            std::string(16, 'T') + std::string(24, 'H') + std::string(24, 'W'));
  EXPECT_EQ(pattern(MropeConvention::sectioned, {2, 0, 1}), "TTW");
}

TEST(Mrope, InterleavedCyclesAxesAsQwen3VL) {
  // transformers' apply_interleaved_mrope for [24, 20, 20]: H at 1, 4, …, 58, W at 2, 5, …, 59,
  // T elsewhere: 20 THW groups, then four T.
  std::string want;
  for (int g = 0; g < 20; ++g) want += "THW";
  EXPECT_EQ(pattern(MropeConvention::interleaved, {24, 20, 20}), want + "TTTT");
  // [11, 11, 10] over 32 pairs: H at 1 … 31 (11), W at 2 … 29 (10).
  want.clear();
  for (int g = 0; g < 10; ++g) want += "THW";
  EXPECT_EQ(pattern(MropeConvention::interleaved, {11, 11, 10}), want + "TH");
}

TEST(Mrope, RejectsBadSectionsNamingTheArgument) {
  alignas(8) float q[4 * 8] = {};
  alignas(8) int64_t positions[4 * 3] = {};
  MropeCall call{.q = view(q, DType::f32, {4, 1, 8}),
                 .q_out = view(q, DType::f32, {4, 1, 8}),
                 .positions = view(positions, DType::i64, {4, 3}),
                 .rotary_dim = 8,
                 .mrope_section = {2, 1, 1}};
  EXPECT_NO_THROW(call.validate());
  auto rejects = [&](MropeCall c, const std::string& argument) {
    try {
      c.validate();
      ADD_FAILURE() << "accepted; expected an error naming " << argument;
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
  };
  MropeCall c = call;
  c.mrope_section = {2, 1, 2};
  rejects(c, "mrope_section");
  c.mrope_section = {4, -1, 1};
  rejects(c, "mrope_section[1]");
  c = call;
  c.convention = MropeConvention::interleaved;
  c.mrope_section = {1, 2, 1};  // height would need pairs 1 and 4 of 4
  rejects(c, "mrope_section[1]");
  c.mrope_section = {2, 0, 2};  // width would need pairs 2 and 5
  rejects(c, "mrope_section[2]");
  c = call;
  c.positions = view(positions, DType::i64, {4, 2});
  rejects(c, "positions.shape[1]");
  c = call;
  positions[3 * 2 + 1] = -1;  // token 2's height
  rejects(c, "positions[2, 1]");
}

}  // namespace
}  // namespace posenc
