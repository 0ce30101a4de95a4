// Uses each installed component once: the kernels' direct entry points, the harness against the
// registry, and the isolation plugins run under. Exits non-zero on any surprise.
#include <posenc/plugin/isolate.h>
#include <posenc/properties/harness.h>
#include <posenc/registry.h>
#include <posenc/run.h>

#include <cmath>
#include <cstdio>

int main() {
  using namespace posenc;
  // PE[0] = [0, 1, 0, 1].
  float table[4];
  SinusoidalCall call;
  call.out = view(table, DType::f32, {1, 4});
  reference::run(call);
  if (table[0] != 0 || table[1] != 1 || table[2] != 0 || table[3] != 1) return 1;
  // posenc::run, sinusoidal/optimized: within its bound, 1 ulp_f32(1 + |x|) = 2⁻²³ here.
  float fast[4];
  call.out = view(fast, DType::f32, {1, 4});
  run(call);
  for (int i = 0; i < 4; ++i)
    if (std::fabs(fast[i] - table[i]) > 0x1p-23f) return 4;
  // Every registered sinusoidal kernel this CPU runs (not AVX-512 code on an AVX2 machine) passes
  // the smoke differential check.
  int cases = 0;
  for (const auto& impl : implementations<SinusoidalCall>()) {
    if (!impl.unavailable_reason().empty()) continue;
    for (const auto& problem : harness::smoke_problems<SinusoidalCall>()) {
      if (!harness::differential(impl, problem).ok) return 2;
      ++cases;
    }
  }
  // A crash in a child is a report, not the end of this process.
  const auto crashed =
      plugin::run_isolated([]() -> std::string { __builtin_trap(); }, std::chrono::seconds(10));
  if (crashed.status != plugin::Isolated::Status::crashed) return 3;
  std::printf("consumer: %d cases passed; isolated crash reported: %s\n", cases,
              crashed.error.c_str());
  return 0;
}
