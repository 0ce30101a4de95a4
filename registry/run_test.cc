// posenc::run and posenc::reference::run (posenc/run.h), every family on its smoke problems:
// run() gives the bits of the registry's "<family>/optimized" entry, which supports every one of
// them; reference::run() the bits of "<family>/reference".
#include "posenc/run.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "posenc/registry.h"
#include "properties/harness.h"

namespace posenc {
namespace {

template <class Call>
const Impl<Call>* optimized_entry() {
  const std::string name = std::string(family_name(Call::kFamily)) + "/optimized";
  for (const auto& impl : implementations<Call>())
    if (impl.name == name) return &impl;
  return nullptr;
}

// Runs `entry` and `direct` on two builds of `problem`; bound 0: the same bits.
template <class Call, class Direct>
harness::Comparison same_bits(const harness::Problem<Call>& problem, const Impl<Call>& entry,
                              Direct direct) {
  harness::Arena expected_arena, got_arena;
  const Call expected = problem.build(expected_arena);
  entry.run(expected);
  const Call got = problem.build(got_arena);
  direct(got);
  return harness::compare_outputs(problem, expected, got, 0);
}

template <class Call>
class Run : public testing::Test {};
using Families = AllCalls::apply<testing::Types>;
TYPED_TEST_SUITE(Run, Families);

TYPED_TEST(Run, IsTheOptimizedEntry) {
  using Call = TypeParam;
  // A family without an optimized kernel yet runs its reference (posenc/run.h).
  const Impl<Call>* optimized = optimized_entry<Call>();
  const Impl<Call>& entry = optimized ? *optimized : reference_impl<Call>();
  const auto problems = harness::smoke_problems<Call>();
  ASSERT_FALSE(problems.empty());
  for (const auto& problem : problems) {
    harness::Arena arena;
    EXPECT_TRUE(supports(entry, problem.build(arena))) << entry.name << ", " << problem.label;
    const auto c = same_bits(problem, entry, [](const Call& call) { run(call); });
    EXPECT_TRUE(c.ok) << problem.label << " against " << entry.name << ": " << c.describe();
  }
}

TYPED_TEST(Run, ReferenceRunIsTheReference) {
  using Call = TypeParam;
  for (const auto& problem : harness::smoke_problems<Call>()) {
    const auto c =
        same_bits(problem, reference_impl<Call>(), [](const Call& call) { reference::run(call); });
    EXPECT_TRUE(c.ok) << problem.label << ": " << c.describe();
  }
}

TEST(Run, BadInputIsAnErrorNamingTheArgument) {
  float out[4] = {7, 7, 7, 7};
  SinusoidalCall call;
  call.out = view(out, DType::f32, {1, 4});
  call.base = -1;
  EXPECT_THROW(run(call), Error);
  EXPECT_THROW(reference::run(call), Error);
  for (float v : out) EXPECT_EQ(v, 7);
}

// Whether two builds' [tokens, heads, dim] outputs hold the same bits (NaNs included).
bool same_outputs(const RopeCall& a, const RopeCall& b) {
  const auto xs = harness::outputs(a), ys = harness::outputs(b);
  for (size_t v = 0; v < xs.size(); ++v) {
    const Tensor &x = xs[v], &y = ys[v];
    for (int64_t i = 0; i < x.shape[0]; ++i)
      for (int64_t j = 0; j < x.shape[1]; ++j)
        for (int64_t k = 0; k < x.shape[2]; ++k)
          if (std::bit_cast<uint64_t>(load(x, x.offset(i, j, k))) !=
              std::bit_cast<uint64_t>(load(y, y.offset(i, j, k))))
            return false;
  }
  return true;
}

// Moves every position of a call to another valid one (below the cache's rows when cached).
void next_positions(const RopeCall& call, int64_t step) {
  const int64_t limit = call.cos ? call.cos->shape[0] - 1 : 1 << 20;
  for (int64_t t = 0; t < call.positions.shape[0]; ++t) {
    const int64_t p = load_index(call.positions, call.positions.offset(t));
    harness::store_index(call.positions, call.positions.offset(t),
                         (p * 7 + 3 * step) % (limit + 1));
  }
}

// The call on its first n tokens: a decode step's one token of a smoke problem, or none.
RopeCall first_tokens(RopeCall call, int64_t n) {
  call.q.shape[0] = call.q_out.shape[0] = call.positions.shape[0] = n;
  if (call.k) call.k->shape[0] = call.k_out->shape[0] = n;
  return call;
}

// A decode loop's RopeStep gives run()'s bits at every step, as positions move, on every rope
// smoke problem (dtypes, layouts, caches, k, strides, in place, scalings), with all its tokens,
// with its first token alone (the one-token path and its memo), and with none.
TEST(RopeStep, EveryStepIsRunsBits) {
  for (const auto& problem : harness::smoke_problems<RopeCall>()) {
    for (int64_t tokens : {int64_t{-1}, int64_t{1}, int64_t{0}}) {  // -1: all
      harness::Arena expected_arena, got_arena;
      RopeCall expected = problem.build(expected_arena), got = problem.build(got_arena);
      if (tokens >= 0) expected = first_tokens(expected, tokens), got = first_tokens(got, tokens);
      const RopeStep step(got);
      for (int64_t n = 0; n < 4; ++n) {
        if (n > 0) next_positions(expected, n), next_positions(got, n);
        run(expected);
        step.step();
        ASSERT_TRUE(same_outputs(expected, got))
            << problem.label << ", tokens " << tokens << ", step " << n;
      }
    }
  }
}

// One f32 decode token: q's heads of 64 dims, all rotated, at *position, written to out.
RopeCall decode_call(std::vector<float>& q, float* out, int64_t* position, double base,
                     bool inverse = false) {
  const int64_t heads = static_cast<int64_t>(q.size()) / 64;
  RopeCall c;
  c.q = view(q.data(), DType::f32, {1, heads, 64});
  c.q_out = view(out, DType::f32, {1, heads, 64});
  c.positions = view(position, DType::i64, {1});
  c.rotary_dim = 64;
  c.inverse = inverse;
  c.base = base;
  return c;
}

// Steps that share one position's memo (angles.h) on a thread: forward and inverse, and another
// base, interleaved at the same position, each within 2 ulp of the reference's rotation (q holds
// integers up to 6, so a pair's norm is below 8.5 and 2 ulp below 2e-6). run() reads the same memo,
// so a memo keyed on the position alone (the inverse step handed the forward sines) would pass a
// comparison with run(): the reference computes every angle itself.
TEST(RopeStep, StepsSharingAPositionKeepTheirOwnCoefficients) {
  std::vector<float> q(2 * 64), want(q.size()), got(q.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 13) - 6;
  int64_t position = 4095;
  const auto call = [&](float* out, bool inverse, double base) {
    return decode_call(q, out, &position, base, inverse);
  };
  const RopeStep forward(call(got.data(), false, 10000)), inverse(call(got.data(), true, 10000)),
      other(call(got.data(), false, 500000));
  for (int64_t p : {4095, 4095, 17, 4095}) {
    position = p;
    for (const auto& [step, inv, base] : {std::tuple{&forward, false, 10000.0},
                                          {&inverse, true, 10000.0},
                                          {&other, false, 500000.0}}) {
      run(call(got.data(), !inv, base));  // the other sign's coefficients, memoized
      step->step();
      reference::run(call(want.data(), inv, base));
      for (size_t i = 0; i < q.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 2e-6) << "element " << i << ", position " << p
                                           << (inv ? ", inverse" : "") << ", base " << base;
      }
    }
  }
}

// Two steps with different bases, stepped in turn with no run() between them and on two threads,
// each within 2 ulp of the reference: a step reads the memo of the thread it runs on, refreshed
// for its own parameters at every step (the thread's memo holds one parameter set at a time).
TEST(RopeStep, StepsOfTwoBasesInTurnOnAnyThread) {
  std::vector<float> q(4 * 64), want(q.size()), got(q.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 11) - 5;
  int64_t position = 0;
  const auto call = [&](float* out, double base) { return decode_call(q, out, &position, base); };
  const RopeStep small(call(got.data(), 10000)), large(call(got.data(), 1e6));
  const auto check = [&](const RopeStep& step, double base, const char* where) {
    step.step();
    reference::run(call(want.data(), base));
    for (size_t i = 0; i < q.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 2e-6)
          << "element " << i << ", position " << position << ", base " << base << ", " << where;
    }
  };
  for (int64_t p : {4095, 4096, 4096, 70000}) {
    position = p;
    check(small, 10000, "this thread");
    check(large, 1e6, "this thread");
    std::thread([&] { check(small, 10000, "another thread"); }).join();
    check(large, 1e6, "this thread, after another");
  }
}

// A position out of range at a step is the Error run() raises, before any output byte is written;
// a bad call is rejected when the step is made.
TEST(RopeStep, BadInputIsAnErrorNamingTheArgument) {
  std::vector<float> q(64, 1), q_out(64, 7), cos(4 * 32, 1), sin(4 * 32, 0);
  int64_t position = 3;
  RopeCall call;
  call.q = view(q.data(), DType::f32, {1, 1, 64});
  call.q_out = view(q_out.data(), DType::f32, {1, 1, 64});
  call.positions = view(&position, DType::i64, {1});
  call.rotary_dim = 64;
  call.cos = view(cos.data(), DType::f32, {4, 32});
  call.sin = view(sin.data(), DType::f32, {4, 32});
  const RopeStep step(call);
  step.step();
  EXPECT_EQ(q_out[0], 1);
  std::fill(q_out.begin(), q_out.end(), 7.0f);
  for (int64_t bad : {4, -1}) {
    position = bad;
    try {
      step.step();
      ADD_FAILURE() << "position " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), "positions[0]");
      EXPECT_EQ(e.value(), std::to_string(bad));
    }
    for (float v : q_out) ASSERT_EQ(v, 7);
  }
  call.rotary_dim = 63;
  try {
    RopeStep{call};
    ADD_FAILURE() << "rotary_dim 63 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "rotary_dim");
  }
  // i32 positions, strided, on the fly (below kMaxPosition): the second token out of range.
  std::vector<float> q2(2 * 64, 1), q2_out(2 * 64, 7);
  int32_t positions[4] = {3, -9, static_cast<int32_t>(kMaxPosition), -9};
  RopeCall fly;
  fly.q = view(q2.data(), DType::f32, {2, 1, 64});
  fly.q_out = view(q2_out.data(), DType::f32, {2, 1, 64});
  fly.positions = view(positions, DType::i32, {2});
  fly.positions.strides[0] = 2;
  fly.rotary_dim = 64;
  const RopeStep fly_step(fly);
  fly_step.step();
  EXPECT_NE(q2_out[64], 7);
  std::fill(q2_out.begin(), q2_out.end(), 7.0f);
  positions[2] = static_cast<int32_t>(kMaxPosition) + 1;
  try {
    fly_step.step();
    ADD_FAILURE() << "position kMaxPosition + 1 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "positions[1]");
    EXPECT_EQ(e.value(), std::to_string(kMaxPosition + 1));
  }
  for (float v : q2_out) ASSERT_EQ(v, 7);
}

// One-token calls through run(), each after a different valid one: run() keeps the last one-token
// call it validated on this thread (optimized/rope.cc), so a call that differs from it in any view
// or parameter must be validated, and rotated, as itself. Each valid variant gives a fresh
// RopeStep's bits; each bad one is the Error naming its argument, with nothing written.
TEST(Run, ADecodeCallAfterAnotherIsTakenAsItself) {
  std::vector<float> q(2 * 64), other(q.size()), got(q.size()), want(q.size()), cos(8 * 36),
      sin(8 * 36);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 13) - 6;
  for (size_t i = 0; i < cos.size(); ++i) cos[i] = std::cos(0.1f * i), sin[i] = std::sin(0.1f * i);
  int64_t position = 5, far = 9;
  const RopeCall valid = decode_call(q, got.data(), &position, 10000);
  RopeCall cached = valid;
  cached.cos = view(cos.data(), DType::f32, {8, 32});
  cached.sin = view(sin.data(), DType::f32, {8, 32});
  const auto variant = [&](RopeCall base, auto edit) {
    edit(base);
    return base;
  };
  const std::vector<std::pair<std::string, RopeCall>> goods = {
      {"valid", valid},
      {"inverse", variant(valid, [](RopeCall& c) { c.inverse = true; })},
      {"interleaved", variant(valid, [](RopeCall& c) { c.layout = RopeLayout::interleaved; })},
      {"base", variant(valid, [](RopeCall& c) { c.base = 500000; })},
      {"rotary_dim", variant(valid, [](RopeCall& c) { c.rotary_dim = 32; })},
      {"scaling", variant(valid,
                          [](RopeCall& c) {
                            c.scaling.kind = RopeScalingKind::linear;
                            c.scaling.factor = 4;
                          })},
      {"attention_factor", variant(valid, [](RopeCall& c) { c.scaling.attention_factor = 0.5; })},
      {"q", variant(valid, [&](RopeCall& c) { c.q.data = other.data(); })},
      {"heads", variant(valid, [](RopeCall& c) { c.q.shape[1] = c.q_out.shape[1] = 1; })},
      {"strides", variant(valid,
                          [](RopeCall& c) {
                            c.q.shape[1] = c.q_out.shape[1] = 1;
                            c.q.strides[0] = c.q.strides[1] = 128;
                          })},
      {"cached", cached},
      // A cached call reads neither base nor scaling: run() need not compare them.
      {"cached, another base", variant(cached, [](RopeCall& c) { c.base = 500000; })},
      {"cache rows", variant(cached, [](RopeCall& c) { c.cos->shape[0] = c.sin->shape[0] = 7; })},
      {"cache strides",
       variant(cached, [](RopeCall& c) { c.cos->strides[0] = c.sin->strides[0] = 36; })},
      {"threads", variant(valid, [](RopeCall& c) { c.threads = 2; })},
  };
  for (const auto& [first, before] : goods) {
    for (const auto& [label, call] : goods) {
      std::fill(other.begin(), other.end(), 0.25f);
      run(before);
      std::fill(got.begin(), got.end(), 7.0f);
      std::fill(want.begin(), want.end(), 7.0f);
      run(call);
      RopeCall fresh = call;
      fresh.q_out.data = want.data();
      RopeStep(fresh).step();
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << label << " after " << first;
    }
  }
  std::vector<float> k(q.size(), 0.5f);
  RopeCall keyed = valid;
  keyed.k = keyed.k_out = view(k.data(), DType::f32, {1, 2, 64});
  // Each bad call after a valid `before` that it differs from in one view or parameter.
  const std::vector<std::tuple<std::string, RopeCall, RopeCall, std::string>> bads = {
      {"threads -1", valid, variant(valid, [](RopeCall& c) { c.threads = -1; }), "threads"},
      {"rotary_dim 63", valid, variant(valid, [](RopeCall& c) { c.rotary_dim = 63; }),
       "rotary_dim"},
      {"layout 7", valid,
       variant(valid, [](RopeCall& c) { c.layout = static_cast<RopeLayout>(7); }), "layout"},
      {"base -1", valid, variant(valid, [](RopeCall& c) { c.base = -1; }), "base"},
      {"scaling factor 0", valid,
       variant(valid,
               [](RopeCall& c) {
                 c.scaling.kind = RopeScalingKind::linear;
                 c.scaling.factor = 0;
               }),
       "scaling.factor"},
      {"q_out of 32 dims", valid, variant(valid, [](RopeCall& c) { c.q_out.shape[2] = 32; }),
       "q_out.shape[2]"},
      {"q_out half a head into q", valid,
       variant(valid, [&](RopeCall& c) { c.q_out.data = q.data() + 32; }), "q_out.data"},
      {"q_out of f16", valid, variant(valid, [](RopeCall& c) { c.q_out.dtype = DType::f16; }),
       "q_out.dtype"},
      {"k_out alone", valid,
       variant(valid,
               [&](RopeCall& c) {
                 c.k_out = view(other.data(), DType::f32, {1, 2, 64});
               }),
       "k_out"},
      {"k of 32 dims", keyed, variant(keyed, [](RopeCall& c) { c.k->shape[2] = 32; }),
       "k.shape[2]"},
      {"k_out over q_out", keyed, variant(keyed, [&](RopeCall& c) { c.k_out->data = got.data(); }),
       "k_out.data"},
      {"cache of 4 rows", cached,
       variant(cached, [](RopeCall& c) { c.cos->shape[0] = c.sin->shape[0] = 4; }), "positions[0]"},
      {"cos of 16 columns", cached, variant(cached, [](RopeCall& c) { c.cos->shape[1] = 16; }),
       "cos.shape[1]"},
      {"sin of 16 columns", cached, variant(cached, [](RopeCall& c) { c.sin->shape[1] = 16; }),
       "sin.shape[1]"},
      {"position 9 past the cache", cached,
       variant(cached, [&](RopeCall& c) { c.positions.data = &far; }), "positions[0]"},
      {"q of rank 4", valid,
       variant(valid,
               [](RopeCall& c) {
                 c.q.rank = c.q_out.rank = 4;
                 c.q.shape[3] = c.q_out.shape[3] = 1;
                 c.q.strides[3] = c.q_out.strides[3] = 1;
               }),
       "q.rank"},
      {"cache of rank 3", cached,
       variant(cached, [](RopeCall& c) { c.cos->rank = c.sin->rank = 3; }), "cos.rank"},
  };
  for (const auto& [label, before, call, argument] : bads) {
    run(before);
    std::fill(got.begin(), got.end(), 7.0f);
    const std::vector<float> q_before = q;
    try {
      run(call);
      ADD_FAILURE() << label << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), argument) << label;
    }
    for (float v : got) ASSERT_EQ(v, 7) << label;
    ASSERT_EQ(q, q_before) << label;
  }
}

}  // namespace
}  // namespace posenc
