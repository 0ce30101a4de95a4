// The kernels alone: rope through posenc::run (the best implementation for this CPU) and through
// the reference, on one small call. Exits non-zero on any surprise.
#include <posenc/registry.h>
#include <posenc/run.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  using namespace posenc;
  constexpr int64_t tokens = 3, heads = 2, head_dim = 8;
  std::vector<float> q(tokens * heads * head_dim), fast(q.size()), exact(q.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.37f * i + 0.1f);
  std::vector<int64_t> positions = {0, 5, 4096};
  RopeCall call;
  call.q = view(q.data(), DType::f32, {tokens, heads, head_dim});
  call.positions = view(positions.data(), DType::i64, {tokens});
  call.rotary_dim = head_dim;

  call.q_out = view(fast.data(), DType::f32, {tokens, heads, head_dim});
  run(call);
  call.q_out = view(exact.data(), DType::f32, {tokens, heads, head_dim});
  reference::run(call);
  // rope/optimized states bound 2 ulp_f32 of the pair norm (≤ √2 here): 1e-6 is far above it.
  for (size_t i = 0; i < q.size(); ++i)
    if (std::fabs(fast[i] - exact[i]) > 1e-6f) return 1;
  // Position 0 rotates by nothing.
  if (std::memcmp(exact.data(), q.data(), heads * head_dim * sizeof(float)) != 0) return 2;

  // posenc::run is the registry's rope/optimized entry.
  std::vector<float> entry(q.size());
  call.q_out = view(entry.data(), DType::f32, {tokens, heads, head_dim});
  for (const auto& impl : implementations<RopeCall>())
    if (impl.name == "rope/optimized") impl.run(call);
  if (std::memcmp(entry.data(), fast.data(), fast.size() * sizeof(float)) != 0) return 3;

  // Bad input is posenc::Error naming the argument, before any output is written.
  call.rotary_dim = 3;
  std::vector<float> untouched(q.size(), 42.0f);
  call.q_out = view(untouched.data(), DType::f32, {tokens, heads, head_dim});
  try {
    run(call);
    return 4;
  } catch (const Error& e) {
    if (!std::strstr(e.what(), "rotary_dim")) return 5;
  }
  for (float v : untouched)
    if (v != 42.0f) return 6;
  std::printf("consumer_kernels: posenc::run and posenc::reference::run agree on rope\n");
  return 0;
}
