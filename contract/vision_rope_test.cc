// 2D vision rope's pair → (axis, frequency) map, pinned to the public implementations' patterns
// (vision_rope.h), and its checks: each error names the argument.
#include "posenc/vision_rope.h"

#include <gtest/gtest.h>

#include <string>

#include "posenc/error.h"

namespace posenc {
namespace {

// "R0 R2 C0 C2 ...": each pair's axis (R row, C column) and frequency index k of ω_k.
std::string pattern(VisionRopeConvention convention, VisionAxisOrder order, int64_t d) {
  std::string s;
  for (int64_t i = 0; i < d / 2; ++i)
    s += (s.empty() ? "" : " ") + std::string(1, "RC"[vision_rope_axis(order, d, i)]) +
         std::to_string(vision_rope_frequency(convention, d, i));
  return s;
}

TEST(VisionRope, AxialIsQwen2VLsRowsThenColumnsOnEvenFrequencies) {
  // VisionRotaryEmbedding(head_dim/2): cat(row·inv_freq, column·inv_freq), inv_freq = ω_0, ω_2, …
  EXPECT_EQ(pattern(VisionRopeConvention::axial, VisionAxisOrder::row_first, 16),
            "R0 R2 R4 R6 C0 C2 C4 C6");
}

TEST(VisionRope, PixtralPutsColumnsOnOddFrequencies) {
  // PixtralRotaryEmbedding: freqs[::2] for rows, freqs[1::2] for columns.
  EXPECT_EQ(pattern(VisionRopeConvention::pixtral, VisionAxisOrder::row_first, 16),
            "R0 R2 R4 R6 C1 C3 C5 C7");
}

TEST(VisionRope, Llama4TakesTheColumnFirst) {
  // Llama4VisionRotaryEmbedding: cat(freqs_x, freqs_y), x = index % side (the column).
  EXPECT_EQ(pattern(VisionRopeConvention::axial, VisionAxisOrder::column_first, 8), "C0 C2 R0 R2");
}

TEST(VisionRope, RejectsBadCallsNamingTheArgument) {
  alignas(8) float q[4 * 8] = {};
  alignas(8) int64_t positions[4 * 2] = {};
  VisionRopeCall call{.q = view(q, DType::f32, {4, 1, 8}),
                      .q_out = view(q, DType::f32, {4, 1, 8}),
                      .positions = view(positions, DType::i64, {4, 2}),
                      .rotary_dim = 8};
  EXPECT_NO_THROW(call.validate());
  auto rejects = [&](VisionRopeCall c, const std::string& argument) {
    try {
      c.validate();
      ADD_FAILURE() << "accepted; expected an error naming " << argument;
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
  };
  VisionRopeCall c = call;
  c.rotary_dim = 6;
  rejects(c, "rotary_dim");
  c.rotary_dim = 12;  // > head_dim, through rope's contract
  rejects(c, "rotary_dim");
  c = call;
  c.positions = view(positions, DType::i64, {4, 3});
  rejects(c, "positions.shape[1]");
  c = call;
  c.convention = static_cast<VisionRopeConvention>(2);
  rejects(c, "convention");
  c = call;
  c.axis_order = static_cast<VisionAxisOrder>(2);
  rejects(c, "axis_order");
  c = call;
  c.position_offset = kMaxPosition + 1;
  rejects(c, "position_offset");
  c = call;
  positions[2 * 2 + 1] = -1;  // token 2's column
  rejects(c, "positions[2, 1]");
  c.position_offset = 1;  // Llama 4's class token: −1 + 1 = 0
  EXPECT_NO_THROW(c.validate());
  positions[2 * 2 + 1] = kMaxPosition;
  rejects(c, "positions[2, 1]");
}

}  // namespace
}  // namespace posenc
