// The memory-bandwidth roofs, STREAM-like, f32, split over 1 or 2 threads: scale (a[i] = s·a[i], in
// place), copy (b[i] = a[i]) and write (a[i] = v, the faster of ordinary and non-temporal stores).
// scale_roof(), copy_roof() and write_roof() measure at a kernel's exact byte count once per run;
// the roof/* rows show them at a few sizes from L1 to DRAM, and roof/fma the compute roof.
#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "bench/baselines.h"
#include "bench/bench.h"

namespace posenc::bench {

namespace {

enum class Kind { scale, copy, fill, fill_nontemporal };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::scale:
      return "scale";
    case Kind::copy:
      return "copy";
    case Kind::fill:
      return "fill";
    case Kind::fill_nontemporal:
      return "fill_nontemporal";
  }
  return "?";
}

// One pre-touched stream whose every pass moves `bytes`: scale and copy read and write each
// element once (bytes/8 elements), a fill writes each of bytes/4 (at least one cache line per
// thread).
class Stream {
 public:
  Stream(Kind kind, double bytes, int threads)
      : kind_(kind),
        threads_(threads),
        n_(std::max<int64_t>(static_cast<int64_t>(bytes / element_bytes()), 16 * threads)),
        buffers_(true),
        a_(buffers_.floats(n_)),
        b_(kind == Kind::copy ? buffers_.floats(n_) : nullptr) {
    std::fill(a_, a_ + n_, 1.0f);
  }

  double bytes() const { return element_bytes() * static_cast<double>(n_); }

  void operator()() {
    run_parallel(threads_, [&](int part, int parts) {
      auto [begin, end] = split(n_, part, parts);
      switch (kind_) {
        case Kind::scale:
          return stream_scale(a_ + begin, end - begin, s_);
        case Kind::copy:
          return stream_copy(a_ + begin, b_ + begin, end - begin);
        case Kind::fill:
          return stream_fill(a_ + begin, end - begin, s_);
        case Kind::fill_nontemporal:
          return stream_fill_nontemporal(a_ + begin, end - begin, s_);
      }
    });
    s_ = 1 / s_;  // alternate 2 and 1/2, so values never drift
  }

 private:
  double element_bytes() const {
    return kind_ == Kind::fill || kind_ == Kind::fill_nontemporal ? 4.0 : 8.0;
  }

  Kind kind_;
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

// A VM's memory need not be uniform: on an AMD EPYC VM (stop 35), one non-temporal fill of
// 128 MiB wrote at 14 and 19 GB/s in 2 of 24 buffers allocated in turn and at 28–36 GB/s in the
// rest, by the physical pages each got. A roof is the best of this many streams, alive together so
// that they hold different pages, so that one unlucky buffer does not set the yardstick.
constexpr int kPlacements = 4;

// Measured once per (kind, bytes, threads) per run.
double roof(Kind kind, double bytes, int threads) {
  static std::map<std::tuple<Kind, double, int>, double> cache;
  auto [it, inserted] = cache.try_emplace({kind, bytes, threads}, 0.0);
  if (inserted) {
    const int placements = smoke() ? 1 : kPlacements;
    std::vector<std::unique_ptr<Stream>> streams;
    for (int p = 0; p < placements; ++p)
      streams.push_back(std::make_unique<Stream>(kind, bytes, threads));
    for (auto& stream : streams) {
      it->second = std::max(it->second, measure_rate(std::ref(*stream), stream->bytes(),
                                                     baseline_seconds() / placements));
    }
  }
  return it->second;
}

}  // namespace

double scale_roof(double bytes, int threads) { return roof(Kind::scale, bytes, threads); }
double copy_roof(double bytes, int threads) { return roof(Kind::copy, bytes, threads); }
double write_roof(double bytes, int threads) {
  return std::max(roof(Kind::fill, bytes, threads), roof(Kind::fill_nontemporal, bytes, threads));
}

void register_roof_rows() {
  std::vector<int64_t> sizes = {int64_t{64} << 10, int64_t{1} << 20};
  if (!smoke())
    sizes.insert(sizes.end(), {int64_t{16} << 20, int64_t{256} << 20, int64_t{1} << 30});
  for (Kind kind : {Kind::scale, Kind::copy, Kind::fill, Kind::fill_nontemporal}) {
    for (int64_t bytes : sizes) {
      for (int threads : kThreadCounts) {
        const std::string name = std::string("roof/") + kind_name(kind) +
                                 "/bytes=" + human_bytes(bytes) +
                                 "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
          Stream stream(kind, static_cast<double>(bytes), threads);
          stream();  // warm-up
          for (auto _ : state) stream();
          state.SetBytesProcessed(static_cast<int64_t>(stream.bytes()) * state.iterations());
        })->UseRealTime();
      }
    }
  }
  // The compute roof: fma_chains' rounds split over 1 or 2 threads. A VM's two vCPUs may share
  // one core's pipes; this row records how far arithmetic itself scales in the run.
  for (int threads : kThreadCounts) {
    const std::string name =
        "roof/fma/chains=" + std::to_string(kFmaChains) + "/threads:" + std::to_string(threads);
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
      const int64_t rounds = smoke() ? int64_t{1} << 10 : int64_t{1} << 18;  // ~0.5 ms at 1 thread
      const auto pass = [&] {
        run_parallel(threads, [&](int part, int parts) {
          const auto [begin, end] = split(rounds, part, parts);
          benchmark::DoNotOptimize(fma_chains(end - begin));
        });
      };
      pass();  // warm-up
      for (auto _ : state) pass();
      state.counters["flops_per_second"] =
          benchmark::Counter(2.0 * kFmaChains * fma_lanes() * static_cast<double>(rounds),
                             benchmark::Counter::kIsIterationInvariantRate);
    })->UseRealTime();
  }
}

}  // namespace posenc::bench
