#include "bench/bench.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <thread>

#include "posenc/error.h"

namespace posenc::bench {

namespace {
bool smoke_mode = false;
}  // namespace

bool smoke() { return smoke_mode; }
void set_smoke(bool on) { smoke_mode = on; }

std::string cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// ---- Buffers ----

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

int64_t product(std::initializer_list<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

}  // namespace

Buffers::~Buffers() {
  for (auto [base, size] : mappings_) munmap(base, size);
}

void* Buffers::map(size_t bytes) {
  // Over-map by a huge page so the buffer can start on a 2 MiB boundary.
  const size_t size = std::max<size_t>(bytes, 64) + kHugePage;
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  mappings_.emplace_back(base, size);
  const auto aligned = (reinterpret_cast<uintptr_t>(base) + kHugePage - 1) & ~(kHugePage - 1);
  void* data = reinterpret_cast<void*>(aligned);
  if (bytes >= kHugePage) madvise(data, bytes, MADV_HUGEPAGE);
  if (touch_) std::memset(data, 0, bytes);
  return data;
}

float* Buffers::floats(int64_t n) { return static_cast<float*>(map(n * sizeof(float))); }

Tensor Buffers::f32(std::initializer_list<int64_t> shape) {
  const int64_t n = product(shape);
  float* data = floats(n);
  if (touch_) {
    // A multiplicative hash of the index, scaled to [-1, 1): cheap, deterministic, not periodic
    // on any stride a kernel walks.
    for (int64_t i = 0; i < n; ++i)
      data[i] = static_cast<float>(static_cast<uint32_t>(i * 2654435761u)) * 0x1p-31f - 1.0f;
  }
  return view(data, DType::f32, shape);
}

Tensor Buffers::values(DType dtype, std::initializer_list<int64_t> shape) {
  if (dtype == DType::f32) return f32(shape);
  const int64_t n = product(shape);
  const auto element = static_cast<int64_t>(dtype_size(dtype));
  const Tensor t = view(floats((n * element + 3) / 4), dtype, shape);
  for (int64_t i = 0; touch_ && i < n; ++i)
    store(t, i, static_cast<float>(static_cast<uint32_t>(i * 2654435761u)) * 0x1p-31f - 1.0f);
  return t;
}

Tensor Buffers::zeros(std::initializer_list<int64_t> shape) {
  return view(floats(product(shape)), DType::f32, shape);
}

Tensor Buffers::zeros_f64(std::initializer_list<int64_t> shape) {
  return view(map(product(shape) * sizeof(double)), DType::f64, shape);
}

Tensor Buffers::positions(int64_t n, int64_t first, int64_t period) {
  auto* data = static_cast<int64_t*>(map(n * sizeof(int64_t)));
  if (touch_)
    for (int64_t t = 0; t < n; ++t) data[t] = first + t % period;
  return view(data, DType::i64, {n});
}

// ---- The thread team ----

namespace {

// Tells the core it is spinning, so its sibling (and power) is not starved.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class Team {
 public:
  ~Team() {
    stop_ = true;
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  void run(int parts, const std::function<void(int, int)>& f) {
    if (parts == 1) return f(0, 1);
    const uint32_t epoch = epoch_.load(std::memory_order_relaxed);
    while (static_cast<int>(workers_.size()) < parts - 1) {
      const int part = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, part, epoch] { work(part, epoch); });
    }
    job_ = &f;
    parts_ = parts;
    // Every worker acknowledges every job, so none still reads job_ when the next one is posted.
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    f(0, parts);
    while (pending_.load(std::memory_order_acquire) != 0) relax();
  }

 private:
  void work(int part, uint32_t seen) {
    for (;;) {
      uint32_t now;
      for (int spin = 0; (now = epoch_.load(std::memory_order_acquire)) == seen; ++spin) {
        if (spin < kSpins)
          relax();
        else
          epoch_.wait(seen, std::memory_order_acquire);
      }
      seen = now;
      if (stop_) return;
      if (part < parts_) (*job_)(part, parts_);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  static constexpr int kSpins = 4000;  // ~100 µs of pause before sleeping
  std::vector<std::thread> workers_;
  std::atomic<uint32_t> epoch_{0};
  std::atomic<int> pending_{0};
  const std::function<void(int, int)>* job_ = nullptr;
  int parts_ = 1;
  std::atomic<bool> stop_{false};
};

}  // namespace

void run_parallel(int parts, const std::function<void(int, int)>& f) {
  static Team team;
  team.run(parts, f);
}

std::pair<int64_t, int64_t> split(int64_t n, int part, int parts) {
  constexpr int64_t kLine = 16;  // f32 per 64-byte line
  auto edge = [&](int p) { return std::min(n, (n * p / parts + kLine - 1) / kLine * kLine); };
  return {edge(part), part + 1 == parts ? n : edge(part + 1)};
}

// ---- Measuring ----

void measure_roofs(double bytes, int threads, bool write_only) {
  scale_roof(bytes, threads), copy_roof(bytes, threads);
  if (write_only) write_roof(bytes, threads);
}

void report_bytes(benchmark::State& state, double bytes, int threads, bool write_only) {
  using benchmark::Counter;
  const double roof = scale_roof(bytes, threads);
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(state.iterations())));
  state.counters["roof_pct"] = Counter(100 * bytes / roof, Counter::kIsIterationInvariantRate);
  state.counters["roof_GBps"] = roof / 1e9;
  state.counters["copy_GBps"] = copy_roof(bytes, threads) / 1e9;
  if (write_only) state.counters["write_GBps"] = write_roof(bytes, threads) / 1e9;
}

double measure_rate(const std::function<void()>& pass, double work, double min_seconds) {
  // STREAM's convention: the best of several timed batches, so a moment when another process
  // holds a core does not lower the yardstick.
  using Clock = std::chrono::steady_clock;
  constexpr int kBatches = 5;
  pass();
  double best = 0;
  for (int batch = 0; batch < kBatches; ++batch) {
    int64_t passes = 0;
    const auto start = Clock::now();
    std::chrono::duration<double> elapsed{};
    do {
      pass();
      ++passes;
      elapsed = Clock::now() - start;
    } while (elapsed.count() < min_seconds / kBatches);
    best = std::max(best, work * static_cast<double>(passes) / elapsed.count());
  }
  return best;
}

double baseline_seconds() { return smoke() ? 0.001 : 0.1; }

std::vector<TokenShape> token_shapes() {
  if (smoke()) return {{1, 2, 64}, {16, 2, 64}};
  std::vector<TokenShape> shapes;
  for (int64_t tokens : {1, 128, 4096, 32768})
    for (auto [heads, head_dim] : {std::pair<int64_t, int64_t>{8, 64}, {32, 128}})
      shapes.push_back({tokens, heads, head_dim});
  return shapes;
}

std::string BiasShape::label() const {
  return "tq=" + std::to_string(tq) + ",tk=" + std::to_string(tk) + ",h=" + std::to_string(heads);
}

std::vector<BiasShape> bias_shapes() {
  if (smoke()) return {{1, 64, 8}, {16, 16, 8}};
  std::vector<BiasShape> shapes;
  for (auto [tq, tk] : {std::pair<int64_t, int64_t>{1, 32768}, {128, 4096}, {2048, 2048}})
    for (int64_t heads : {8, 64}) shapes.push_back({tq, tk, heads});
  return shapes;
}

std::vector<std::pair<std::string, RopeScaling>> rope_scalings(int64_t rotary_dim) {
  const int64_t half = rotary_dim / 2;
  RopeScaling none, linear, ntk, dynamic, yarn, llama3, longrope;
  linear.kind = RopeScalingKind::linear;  // position interpolation, 4x
  linear.factor = 4;
  ntk.kind = RopeScalingKind::ntk;
  ntk.alpha = 8;
  dynamic.kind = RopeScalingKind::dynamic_ntk;  // 4x past 4096 tokens, at 16384
  dynamic.factor = 4;
  dynamic.max_position = 4096;
  dynamic.seq_len = 16384;
  yarn.kind = RopeScalingKind::yarn;  // Qwen2.5-style: 4x over 32768
  yarn.factor = 4;
  yarn.original_max_position = 32768;
  llama3.kind = RopeScalingKind::llama3;  // Llama 3.1
  llama3.factor = 8;
  llama3.original_max_position = 8192;
  longrope.kind = RopeScalingKind::longrope;  // Phi-3-style, past the original 4096
  longrope.factor = 32;
  longrope.original_max_position = 4096;
  longrope.seq_len = 8192;
  for (int64_t i = 0; i < half; ++i) {
    longrope.short_factor.push_back(1.0 + 0.05 * static_cast<double>(i) / half);
    longrope.long_factor.push_back(1.0 + 40.0 * static_cast<double>(i) / half);
  }
  return {{"none", none}, {"linear", linear}, {"ntk", ntk},          {"dynamic_ntk", dynamic},
          {"yarn", yarn}, {"llama3", llama3}, {"longrope", longrope}};
}

// ---- The budget ----

namespace {

struct Speed {
  const void* case_key;     // the case it was measured on
  double seconds_per_unit;  // per byte, or per FLOP when the case counts FLOPs
};

std::map<std::pair<std::string, int>, Speed>& speeds() {
  static std::map<std::pair<std::string, int>, Speed> table;
  return table;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", s);
  return text;
}

}  // namespace

double budget_seconds() {
  static const double budget = [] {
    const char* env = std::getenv("POSENC_BENCH_BUDGET");
    if (env == nullptr || *env == '\0') return 30.0;
    char* end = nullptr;
    const double seconds = std::strtod(env, &end);
    require(*end == '\0' && seconds > 0, "POSENC_BENCH_BUDGET", env, "must be seconds > 0");
    return seconds;
  }();
  return budget;
}

std::optional<std::string> over_budget(const std::string& impl, int threads, const void* case_key,
                                       double work) {
  auto it = speeds().find({impl, threads});
  // Google Benchmark calls a case several times; once it has started, it finishes.
  if (it == speeds().end() || it->second.case_key == case_key) return std::nullopt;
  const double predicted = it->second.seconds_per_unit * work;
  if (predicted <= budget_seconds()) return std::nullopt;
  return "skipped: ~" + seconds_text(predicted) +
         " per call predicted from a smaller case, over POSENC_BENCH_BUDGET = " +
         seconds_text(budget_seconds());
}

void record_speed(const std::string& impl, int threads, const void* case_key, double work,
                  double seconds_per_call) {
  speeds()[{impl, threads}] = {case_key, seconds_per_call / work};
}

namespace {
bool failed = false;
}  // namespace

void note_failure() { failed = true; }
bool any_failure() { return failed; }

CaseSlot& case_slot() {
  static CaseSlot slot;
  return slot;
}

// ---- Families ----

namespace {

std::vector<std::pair<Family, void (*)()>>& families() {
  static std::vector<std::pair<Family, void (*)()>> list;
  return list;
}

}  // namespace

bool add_family(Family family, void (*register_family)()) {
  families().emplace_back(family, register_family);
  return true;
}

void register_families() {
  auto list = families();
  std::sort(list.begin(), list.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto [family, register_family] : list) register_family();
}

}  // namespace posenc::bench
