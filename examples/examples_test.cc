// The example plugins through the loader: the correct one matches the fp64 reference, the fp32
// angle one drifts as positions grow. (The property suite will check them in full.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "plugin/loader.h"
#include "properties/error_by_position.h"
#include "properties/harness.h"
#include "properties/testing.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::ulp_f32;

const plugin::Plugin& correct() {
  static const plugin::Plugin p = plugin::load(POSENC_EXAMPLE);
  return p;
}
const plugin::Plugin& fp32_angles() {
  static const plugin::Plugin p = plugin::load(POSENC_EXAMPLE_FP32_ANGLES);
  return p;
}

template <class Call>
const Impl<Call>& only(const plugin::Plugin& p) {
  EXPECT_EQ(p.kernels<Call>().size(), 1u);
  return p.kernels<Call>().front();
}

TEST(Examples, DeclareTheirKernels) {
  EXPECT_EQ(correct().size(), 2u);
  EXPECT_EQ(only<RopeCall>(correct()).name, "rope/example");
  EXPECT_EQ(only<SinusoidalCall>(correct()).name, "sinusoidal/example");
  EXPECT_EQ(only<RopeCall>(fp32_angles()).name, "rope/fp32_angles");
  const Impl<RopeCall>& rope = only<RopeCall>(correct());
  EXPECT_EQ(rope.bound, 1);
  EXPECT_TRUE(rope.variants & variant::rope_interleaved);
  EXPECT_TRUE(rope.variants & variant::scaling_bit(RopeScalingKind::linear));
  EXPECT_FALSE(rope.variants & variant::rope_cached);
  EXPECT_FALSE(rope.variants & variant::scaling_bit(RopeScalingKind::yarn));
}

// ---- sinusoidal: the harness's differential check against the reference ----

TEST(Examples, CorrectSinusoidalMatchesTheReference) {
  const auto problems = harness::smoke_problems<SinusoidalCall>();
  for (const auto& problem : problems) {
    const harness::Outcome o = harness::differential(only<SinusoidalCall>(correct()), problem);
    EXPECT_TRUE(o.ok) << problem.label << ": " << o.failure;
    EXPECT_GT(o.comparison.checked, 0) << problem.label;
    EXPECT_LE(o.comparison.worst, 1.0) << problem.label;
  }
}

// out = x + PE[positions], positions uniform in [0, max_position].
harness::Problem<SinusoidalCall> sinusoidal_add(int64_t max_position) {
  return {"positions<=" + std::to_string(max_position), [=](Arena& arena) {
            harness::Values values(static_cast<uint64_t>(max_position));
            SinusoidalCall call;
            call.out = arena.alloc(DType::f32, {32, 64});
            call.x = arena.alloc(DType::f32, {32, 64});
            call.positions = arena.alloc(DType::i64, {32});
            values.fill(*call.x);
            values.fill_index(*call.positions, 0, max_position);
            return call;
          }};
}

TEST(Examples, Fp32AnglesSinusoidalWorsensWithPosition) {
  std::vector<double> worst;
  for (int64_t max_position : {100, 10000, 1 << 20, 1 << 24}) {
    const auto problem = sinusoidal_add(max_position);
    const harness::Outcome good = harness::differential(only<SinusoidalCall>(correct()), problem);
    EXPECT_TRUE(good.ok) << problem.label << ": " << good.failure;
    const harness::Outcome bad =
        harness::differential(only<SinusoidalCall>(fp32_angles()), problem);
    worst.push_back(bad.comparison.worst);
    std::printf("fp32 angles, %s: worst %.3g ulp\n", problem.label.c_str(), worst.back());
  }
  for (size_t i = 1; i < worst.size(); ++i) EXPECT_GT(worst[i], worst[i - 1]);
  EXPECT_GT(worst.back(), 1e6);  // an angle off by ~0.5 rad at 2^24
}

TEST(Examples, RejectsBadInputBeforeWriting) {
  Arena arena;
  SinusoidalCall call;
  call.out = arena.alloc(DType::f32, {4, 6});
  call.positions = arena.alloc(DType::i64, {4});
  harness::Values(1).fill_index(*call.positions, 0, 10);
  call.positions->as<int64_t>()[2] = kMaxPosition + 1;
  harness::expect_rejected(only<SinusoidalCall>(correct()).run, call, arena, "positions[2]");
  call.positions->as<int64_t>()[2] = 0;
  call.base = -1;
  harness::expect_rejected(only<SinusoidalCall>(correct()).run, call, arena, "base");
}

// ---- README's example ----

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Examples, ReadmeShowsTheLearnedTablePlugin) {
  const std::string code = read(std::string(POSENC_SOURCE_DIR) + "/examples/learned_table.c");
  ASSERT_FALSE(code.empty());
  EXPECT_NE(read(std::string(POSENC_SOURCE_DIR) + "/README.md").find("```c\n" + code + "```"),
            std::string::npos)
      << "README's plugin example differs from examples/learned_table.c";
}

TEST(Examples, LearnedTableMatchesTheReference) {
  const plugin::Plugin p = plugin::load(POSENC_EXAMPLE_LEARNED_TABLE);
  const Impl<AbsoluteCall>& learned = only<AbsoluteCall>(p);
  EXPECT_EQ(learned.name, "absolute/learned");
  for (const auto& problem : harness::smoke_problems<AbsoluteCall>()) {
    const harness::Outcome o = harness::differential(learned, problem);
    EXPECT_TRUE(o.ok) << problem.label << ": " << o.failure;
    EXPECT_GT(o.comparison.checked, 0) << problem.label;
  }
}

// ---- rope: the differential check against the reference, then golden values ----

// The rope smoke problems the examples support (on-the-fly angles, no or linear scaling).
std::vector<harness::Problem<RopeCall>> supported_rope_problems() {
  std::vector<harness::Problem<RopeCall>> supported;
  for (auto& problem : harness::smoke_problems<RopeCall>()) {
    Arena probe;
    if (supports(only<RopeCall>(correct()), problem.build(probe))) supported.push_back(problem);
  }
  return supported;
}

TEST(Examples, CorrectRopeMatchesTheReference) {
  const auto problems = supported_rope_problems();
  EXPECT_GE(problems.size(), 2u);
  for (const auto& problem : problems) {
    const harness::Outcome o = harness::differential(only<RopeCall>(correct()), problem);
    EXPECT_TRUE(o.ok) << problem.label << ": " << o.failure;
    EXPECT_GT(o.comparison.checked, 0) << problem.label;
    std::printf("example rope, %s: worst %.3g ulp\n", problem.label.c_str(), o.comparison.worst);
  }
}

TEST(Examples, Fp32AnglesRopeFailsTheDifferentialCheck) {
  for (const auto& problem : supported_rope_problems()) {
    const harness::Outcome o = harness::differential(only<RopeCall>(fp32_angles()), problem);
    EXPECT_FALSE(o.ok) << problem.label;
    std::printf("fp32 angles rope, %s: worst %.3g ulp\n", problem.label.c_str(),
                o.comparison.worst);
  }
}

struct Rope {
  Arena arena;
  RopeCall call;
  // One token, one head, head_dim values x, rotated at `position`.
  Rope(std::initializer_list<float> x, int64_t position, int64_t rotary_dim,
       RopeLayout layout = RopeLayout::half_split) {
    const auto d = static_cast<int64_t>(x.size());
    call.q = arena.alloc(DType::f32, {1, 1, d});
    call.q_out = arena.alloc(DType::f32, {1, 1, d});
    call.positions = arena.alloc(DType::i64, {1});
    std::copy(x.begin(), x.end(), call.q.as<float>());
    call.positions.as<int64_t>()[0] = position;
    call.rotary_dim = rotary_dim;
    call.layout = layout;
  }
  std::vector<float> run(const plugin::Plugin& p) {
    only<RopeCall>(p).run(call);
    return {call.q_out.as<float>(), call.q_out.as<float>() + call.q_out.shape[2]};
  }
};

// Error of a rotated pair in the rope tolerance unit, ulp_f32(‖(a, b)‖).
double pair_error(double a, double b, double p, float got0, float got1) {
  const double unit = ulp_f32(std::hypot(a, b));
  return std::max(std::fabs(got0 - (a * std::cos(p) - b * std::sin(p))),
                  std::fabs(got1 - (a * std::sin(p) + b * std::cos(p)))) /
         unit;
}

TEST(Examples, RopeRotatesAPair) {
  // rotary_dim 2: ω_0 = 1, so position p turns (2, 1) by p radians; length stays √5.
  for (int64_t p : {0, 1, 1000, 1 << 20, (1 << 24) - 3}) {
    Rope r({2, 1}, p, 2);
    const auto y = r.run(correct());
    EXPECT_LE(pair_error(2, 1, static_cast<double>(p), y[0], y[1]), 1.0) << "p=" << p;
  }
  Rope zero({2, 1}, 0, 2);
  EXPECT_EQ(zero.run(correct()), (std::vector<float>{2, 1}));
}

TEST(Examples, ErrorByPositionOfTheRopeKernels) {
  const auto good = harness::error_by_position(only<RopeCall>(correct()));
  const auto bad = harness::error_by_position(only<RopeCall>(fp32_angles()));
  ASSERT_EQ(good.size(), 25u);
  ASSERT_EQ(bad.size(), 25u);
  for (size_t i = 0; i < good.size(); ++i) {
    EXPECT_TRUE(good[i].ok) << good[i].lo << ": " << good[i].failure;
    std::printf("positions [%lld, %lld]: example %.3g, fp32_angles %.3g ulp\n",
                static_cast<long long>(bad[i].lo), static_cast<long long>(bad[i].hi), good[i].worst,
                bad[i].worst);
  }
  EXPECT_TRUE(bad[1].ok) << bad[1].failure;  // positions 1 and 2
  EXPECT_FALSE(bad.back().ok);
  EXPECT_GT(bad.back().worst, 1e5);
}

TEST(Examples, Fp32AnglesRopeDriftsAtLongPositions) {
  // Half-split, rotary_dim 4: pair 0 is (x0, x2), turned by p·ω_0 = p; pair 1 is (x1, x3), turned
  // by p·ω_1 = p/100. p·1 is exact in float, p·0.01 is not.
  auto check = [](int64_t p, double bad_pair1_at_least, double bad_pair1_at_most) {
    const double angle1 = static_cast<double>(p) * std::pow(10000.0, -0.5);
    const auto good = Rope({2, 1, 0.5f, -1}, p, 4).run(correct());
    EXPECT_LE(pair_error(2, 0.5, static_cast<double>(p), good[0], good[2]), 1.0) << p;
    EXPECT_LE(pair_error(1, -1, angle1, good[1], good[3]), 1.0) << p;
    const auto bad = Rope({2, 1, 0.5f, -1}, p, 4).run(fp32_angles());
    EXPECT_LE(pair_error(2, 0.5, static_cast<double>(p), bad[0], bad[2]), 1.0) << p;
    const double error = pair_error(1, -1, angle1, bad[1], bad[3]);
    EXPECT_GE(error, bad_pair1_at_least) << p;
    EXPECT_LE(error, bad_pair1_at_most) << p;
  };
  check(10, 0, 1);                 // hidden at short positions
  check((1 << 20) + 7, 100, 1e6);  // thousands of ulp at a million
}

}  // namespace
}  // namespace posenc
