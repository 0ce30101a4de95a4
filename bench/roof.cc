// The memory-bandwidth roof, STREAM-like: scale (a[i] = s·a[i], in place) and copy (b[i] = a[i]),
// f32, split over 1 or 2 threads. scale_roof() and copy_roof() measure at a kernel's exact byte
// count once per run; the roof/* rows show both at a few sizes from L1 to DRAM.
#include <map>
#include <tuple>

#include "bench/baselines.h"
#include "bench/bench.h"

namespace posenc::bench {

namespace {

// Elements so that one pass moves `bytes` (each element is read once and written once), at least
// one cache line per thread.
int64_t elements(double bytes, int threads) {
  return std::max<int64_t>(static_cast<int64_t>(bytes / 8), 16 * threads);
}

// One pass of scale over a, alternating s = 2 and 1/2 so values never drift.
struct ScalePass {
  float* a;
  int64_t n;
  int threads;
  float s = 2;
  void operator()() {
    run_parallel(threads, [&](int part, int parts) {
      auto [begin, end] = split(n, part, parts);
      stream_scale(a + begin, end - begin, s);
    });
    s = 1 / s;
  }
};

struct CopyPass {
  const float* a;
  float* b;
  int64_t n;
  int threads;
  void operator()() {
    run_parallel(threads, [&](int part, int parts) {
      auto [begin, end] = split(n, part, parts);
      stream_copy(a + begin, b + begin, end - begin);
    });
  }
};

std::string human_bytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30) && bytes % (int64_t{1} << 30) == 0)
    return std::to_string(bytes >> 30) + "GiB";
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + "MiB";
  return std::to_string(bytes >> 10) + "KiB";
}

}  // namespace

void register_roof_rows() {
  std::vector<int64_t> sizes = {int64_t{64} << 10, int64_t{1} << 20};
  if (!smoke())
    sizes.insert(sizes.end(), {int64_t{16} << 20, int64_t{256} << 20, int64_t{1} << 30});
  for (const char* kind : {"scale", "copy"}) {
    for (int64_t bytes : sizes) {
      for (int threads : kThreadCounts) {
        const std::string name = std::string("roof/") + kind + "/bytes=" + human_bytes(bytes) +
                                 "/threads:" + std::to_string(threads);
        const bool scale = kind[0] == 's';
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
          const int64_t n = elements(static_cast<double>(bytes), threads);
          Buffers buffers(true);
          float* a = buffers.floats(n);
          std::fill(a, a + n, 1.0f);
          std::function<void()> pass;
          if (scale)
            pass = ScalePass{a, n, threads};
          else
            pass = CopyPass{a, buffers.floats(n), n, threads};
          pass();  // warm-up
          for (auto _ : state) pass();
          state.SetBytesProcessed(static_cast<int64_t>(8 * n) * state.iterations());
        })->UseRealTime();
      }
    }
  }
}

namespace {

// Measured once per (kind, elements, threads) per run.
double roof(bool scale, double bytes, int threads) {
  static std::map<std::tuple<bool, int64_t, int>, double> cache;
  const int64_t n = elements(bytes, threads);
  auto [it, inserted] = cache.try_emplace({scale, n, threads}, 0.0);
  if (inserted) {
    Buffers buffers(true);
    float* a = buffers.floats(n);
    std::fill(a, a + n, 1.0f);
    std::function<void()> pass;
    if (scale)
      pass = ScalePass{a, n, threads};
    else
      pass = CopyPass{a, buffers.floats(n), n, threads};
    it->second = measure_rate(pass, 8.0 * static_cast<double>(n), baseline_seconds());
  }
  return it->second;
}

}  // namespace

double scale_roof(double bytes, int threads) { return roof(true, bytes, threads); }
double copy_roof(double bytes, int threads) { return roof(false, bytes, threads); }

}  // namespace posenc::bench
