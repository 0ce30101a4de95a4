// The memory-bandwidth roof, STREAM-like: scale (a[i] = s·a[i], in place) and copy (b[i] = a[i]),
// f32, split over 1 or 2 threads. scale_roof() and copy_roof() measure at a kernel's exact byte
// count once per run; the roof/* rows show both at a few sizes from L1 to DRAM.
#include <map>
#include <tuple>

#include "bench/baselines.h"
#include "bench/bench.h"

namespace posenc::bench {

namespace {

// One pre-touched scale or copy stream whose every pass moves `bytes` (each element is read once
// and written once; at least one cache line per thread).
class Stream {
 public:
  Stream(bool scale, double bytes, int threads)
      : scale_(scale),
        threads_(threads),
        n_(std::max<int64_t>(static_cast<int64_t>(bytes / 8), 16 * threads)),
        buffers_(true),
        a_(buffers_.floats(n_)),
        b_(scale ? nullptr : buffers_.floats(n_)) {
    std::fill(a_, a_ + n_, 1.0f);
  }

  double bytes() const { return 8.0 * static_cast<double>(n_); }

  void operator()() {
    run_parallel(threads_, [&](int part, int parts) {
      auto [begin, end] = split(n_, part, parts);
      if (scale_)
        stream_scale(a_ + begin, end - begin, s_);
      else
        stream_copy(a_ + begin, b_ + begin, end - begin);
    });
    s_ = 1 / s_;  // alternate 2 and 1/2, so values never drift
  }

 private:
  bool scale_;
  int threads_;
  int64_t n_;
  Buffers buffers_;
  float *a_, *b_;
  float s_ = 2;
};

std::string human_bytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30) && bytes % (int64_t{1} << 30) == 0)
    return std::to_string(bytes >> 30) + "GiB";
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + "MiB";
  return std::to_string(bytes >> 10) + "KiB";
}

// Measured once per (kind, bytes, threads) per run.
double roof(bool scale, double bytes, int threads) {
  static std::map<std::tuple<bool, double, int>, double> cache;
  auto [it, inserted] = cache.try_emplace({scale, bytes, threads}, 0.0);
  if (inserted) {
    Stream stream(scale, bytes, threads);
    it->second = measure_rate(std::ref(stream), stream.bytes(), baseline_seconds());
  }
  return it->second;
}

}  // namespace

double scale_roof(double bytes, int threads) { return roof(true, bytes, threads); }
double copy_roof(double bytes, int threads) { return roof(false, bytes, threads); }

void register_roof_rows() {
  std::vector<int64_t> sizes = {int64_t{64} << 10, int64_t{1} << 20};
  if (!smoke())
    sizes.insert(sizes.end(), {int64_t{16} << 20, int64_t{256} << 20, int64_t{1} << 30});
  for (bool scale : {true, false}) {
    for (int64_t bytes : sizes) {
      for (int threads : kThreadCounts) {
        const std::string name = std::string("roof/") + (scale ? "scale" : "copy") +
                                 "/bytes=" + human_bytes(bytes) +
                                 "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
          Stream stream(scale, static_cast<double>(bytes), threads);
          stream();  // warm-up
          for (auto _ : state) stream();
          state.SetBytesProcessed(static_cast<int64_t>(stream.bytes()) * state.iterations());
        })->UseRealTime();
      }
    }
  }
}

}  // namespace posenc::bench
