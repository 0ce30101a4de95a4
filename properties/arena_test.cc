// Read-guarded arenas: each allocation flush against an inaccessible page, a read past it recorded
// (in any thread) and named, a write there still a stray write.
#include "properties/arena.h"

#include <gtest/gtest.h>

#include <thread>

namespace posenc::harness {
namespace {

const auto* bytes(const Tensor& t) { return static_cast<const volatile uint8_t*>(t.data); }

TEST(ReadGuard, AReadPastTheEndIsNamedWithItsOffset) {
  Arena arena(ReadGuard::end);
  const Tensor x = arena.alloc(DType::f32, {3, 5});
  const Tensor out = arena.alloc(DType::f32, {3, 5});
  arena.snapshot();
  (void)bytes(x)[14 * 4 + 3];  // the last byte: no fault
  EXPECT_EQ(arena.stray_read({{"x", x, false}, {"out", out, true}}), std::nullopt);
  (void)bytes(x)[15 * 4 + 2];
  EXPECT_EQ(arena.stray_read({{"x", x, false}, {"out", out, true}}),
            "read outside input x (byte +2 after its end)");
  EXPECT_EQ(arena.stray_write({out}), std::nullopt);  // a read writes nothing
}

TEST(ReadGuard, AReadBeforeTheStartIsNamed) {
  Arena arena(ReadGuard::start);
  const Tensor positions = arena.alloc(DType::i64, {7});
  arena.snapshot();
  (void)bytes(positions)[56 + 10];  // past the end: poisoned slack, as in an ordinary arena
  EXPECT_EQ(arena.stray_read({{"positions", positions, false}}), std::nullopt);
  (void)bytes(positions)[-8];
  EXPECT_EQ(arena.stray_read({{"positions", positions, false}}),
            "read outside input positions (byte -8 before its start)");
}

TEST(ReadGuard, APaddedViewEndsAtThePageToo) {
  // Padded rows: the view's last element, not its buffer's padding, touches the page.
  Arena arena(ReadGuard::end);
  const Tensor q = arena.alloc(DType::bf16, {2, 3, 4}, Layout::padded);
  int64_t last = 0;
  for (int d = 0; d < q.rank; ++d) last += (q.shape[d] - 1) * q.strides[d];
  arena.snapshot();
  (void)bytes(q)[(last + 1) * 2];
  EXPECT_EQ(arena.stray_read({{"q", q, false}}), "read outside input q (byte +0 after its end)");
}

TEST(ReadGuard, AReadInAnotherThreadIsRecorded) {
  Arena arena(ReadGuard::end);
  const Tensor k = arena.alloc(DType::f16, {4, 2});
  arena.snapshot();
  std::thread([&] { (void)bytes(k)[16]; }).join();
  EXPECT_EQ(arena.stray_read({{"k", k, false}}), "read outside input k (byte +0 after its end)");
}

TEST(ReadGuard, AWritePastAnOutputIsAStrayWriteInTheGuard) {
  Arena arena(ReadGuard::end);
  const Tensor out = arena.alloc(DType::f32, {2, 2});
  arena.snapshot();
  out.as<float>()[4] = 1.0f;
  const auto stray = arena.stray_write({out});
  ASSERT_TRUE(stray.has_value());
  EXPECT_NE(stray->find("byte 16 (in the guard after it)"), std::string::npos) << *stray;
}

// A fault off the guard pages goes to the handler that was there before (the default, or ASan's).
TEST(ReadGuardDeathTest, AnyOtherFaultStillEndsTheProcess) {
  EXPECT_DEATH(
      {
        Arena arena(ReadGuard::end);
        arena.alloc(DType::f32, {4});
        *static_cast<volatile int*>(reinterpret_cast<int*>(16)) = 1;
      },
      "");
}

TEST(ReadGuard, AnOrdinaryArenaRecordsNoReads) {
  Arena arena;
  const Tensor x = arena.alloc(DType::f32, {4});
  arena.snapshot();
  (void)bytes(x)[16];
  (void)bytes(x)[-1];
  EXPECT_EQ(arena.stray_read({{"x", x, false}}), std::nullopt);
}

}  // namespace
}  // namespace posenc::harness
