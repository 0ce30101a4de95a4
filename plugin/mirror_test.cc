#include "plugin/mirror.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "plugin/isolate.h"

namespace posenc::plugin {
namespace {

using namespace std::chrono_literals;

// Runs `kernel` in a child on the mirror's views, as the plugin loader does.
template <class Kernel>
Isolated in_child(Kernel&& kernel) {
  return run_isolated(
      [&] {
        kernel();
        return std::string();
      },
      10s);
}

TEST(Mirror, BringsBackTheChildsWrites) {
  std::vector<float> buffer(12, 1.0f);
  Tensor out = view(buffer.data(), DType::f32, {3, 4});
  Mirror mirror;
  mirror.add("out", out);
  mirror.map();
  ASSERT_NE(out.data, buffer.data());
  ASSERT_TRUE(in_child([&] { out.as<float>()[5] = 7.0f; }).ok());
  EXPECT_EQ(buffer[5], 1.0f);  // not before copy_back
  EXPECT_EQ(mirror.copy_back(), std::nullopt);
  EXPECT_EQ(buffer[5], 7.0f);
  EXPECT_EQ(buffer[4], 1.0f);
}

TEST(Mirror, KeepsAliasingAndAlignment) {
  // q and k packed per token in one buffer, q_out the same view as q (in place), x elsewhere.
  alignas(64) float qk[2 * 2 * 8] = {};
  std::vector<float> x(8);
  Tensor q = view(qk, DType::f32, {2, 8}, {16, 1});
  Tensor q_out = q;
  Tensor k = view(qk + 8, DType::f32, {2, 8}, {16, 1});
  Tensor other = view(x.data() + 1, DType::f32, {7});
  Mirror mirror;
  mirror.add("q", q);
  mirror.add("q_out", q_out);
  mirror.add("k", k);
  mirror.add("x", other);
  mirror.map();
  EXPECT_TRUE(mirror.unmirrored().empty());
  EXPECT_EQ(q.data, q_out.data);
  EXPECT_EQ(k.as<float>() - q.as<float>(), 8);
  for (const Tensor* t : {&q, &k, &other}) EXPECT_NE(t->data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q.data) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(other.data) % 64,
            reinterpret_cast<uintptr_t>(x.data() + 1) % 64);
}

TEST(Mirror, ReportsAWritePastTheEndAndKeepsItOut) {
  std::vector<float> buffer(16, 1.0f);
  Tensor out = view(buffer.data(), DType::f32, {2, 4});  // the first 8 floats only
  Mirror mirror;
  mirror.add("out", out);
  mirror.map();
  ASSERT_TRUE(in_child([&] { out.as<float>()[8] = 9.0f; }).ok());
  EXPECT_EQ(mirror.copy_back(), "byte +0 after the end of the memory of out");
  EXPECT_EQ(buffer[8], 1.0f);
}

TEST(Mirror, ReportsAWriteBeforeTheStart) {
  std::vector<float> buffer(8, 1.0f);
  Tensor a = view(buffer.data() + 2, DType::f32, {4});
  Tensor b = a;
  Mirror mirror;
  mirror.add("x", a);
  mirror.add("out", b);
  mirror.map();
  ASSERT_TRUE(in_child([&] { a.as<float>()[-1] = 9.0f; }).ok());
  EXPECT_EQ(mirror.copy_back(), "byte -4 before the memory of x and out");
  EXPECT_EQ(buffer[1], 1.0f);
}

TEST(Mirror, AWildWriteFaultsOnAGuardPage) {
  std::vector<float> buffer(4);
  Tensor out = view(buffer.data(), DType::f32, {4});
  Mirror mirror;
  mirror.add("out", out);
  mirror.map();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const Isolated r = in_child([&] { out.as<char>()[page + Mirror::kSlack + 64] = 1; });
  EXPECT_EQ(r.status, Isolated::Status::crashed) << r.describe();
  EXPECT_EQ(mirror.copy_back(), std::nullopt);  // the fault stopped it before any slack write
}

TEST(Mirror, CopiesBackGapBytesInsideAPaddedView) {
  std::vector<float> buffer(10, 1.0f);
  Tensor out = view(buffer.data(), DType::f32, {2, 4}, {5, 1});  // buffer[4] is a gap
  Mirror mirror;
  mirror.add("out", out);
  mirror.map();
  ASSERT_TRUE(in_child([&] { out.as<float>()[4] = 3.0f; }).ok());
  EXPECT_EQ(mirror.copy_back(), std::nullopt);  // within the extent: the caller's guards judge
  EXPECT_EQ(buffer[4], 3.0f);
}

TEST(Mirror, CopiesBackOnlyTheBytesTheChildChanged) {
  std::vector<float> buffer(4, 1.0f);
  Tensor out = view(buffer.data(), DType::f32, {4});
  Mirror mirror;
  mirror.add("out", out);
  mirror.map();
  buffer[3] = 5.0f;  // changed here meanwhile (another thread of the caller, say)
  ASSERT_TRUE(in_child([&] { out.as<float>()[0] = 2.0f; }).ok());
  EXPECT_EQ(mirror.copy_back(), std::nullopt);
  EXPECT_EQ(buffer[0], 2.0f);
  EXPECT_EQ(buffer[3], 5.0f);
}

TEST(Mirror, LeavesViewsItCannotMirror) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* locked = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(locked, MAP_FAILED);
  std::vector<float> buffer(4);
  Tensor unreadable = view(locked, DType::f32, {4});
  Tensor null_data = view(nullptr, DType::f32, {4});
  Tensor negative = view(buffer.data(), DType::f32, {-1});
  Tensor overflowing = view(buffer.data(), DType::f32, {int64_t{1} << 40}, {int64_t{1} << 40});
  Tensor empty = view(nullptr, DType::f32, {0, 4});
  Mirror mirror;
  mirror.add("a", unreadable);
  mirror.add("b", null_data);
  mirror.add("c", negative);
  mirror.add("d", overflowing);
  mirror.add("e", empty);
  mirror.map();
  EXPECT_EQ(mirror.unmirrored(),
            (std::vector<std::string>{"b (null data)", "c (negative shape)",
                                      "d (extent overflows int64)", "a (memory not readable)"}));
  EXPECT_EQ(unreadable.data, locked);
  EXPECT_EQ(negative.data, buffer.data());
  EXPECT_EQ(empty.data, nullptr);
  EXPECT_EQ(mirror.copy_back(), std::nullopt);
  munmap(locked, page);
}

TEST(Mirror, ReportsAWriteToReadOnlyMemory) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* memory = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  Tensor table = view(memory, DType::f32, {4});
  Mirror mirror;
  mirror.add("table", table);
  mirror.map();
  ASSERT_TRUE(in_child([&] { table.as<float>()[1] = 1.0f; }).ok());
  // 1.0f is 00 00 80 3f: its first byte that differs from 0.0f is byte 6.
  EXPECT_EQ(mirror.copy_back(), "byte 6 of the memory of table, which is not writable");
  munmap(memory, page);
}

}  // namespace
}  // namespace posenc::plugin
