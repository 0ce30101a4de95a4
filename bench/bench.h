// The benchmark harness shared by every bench/<family>_bench.cc: pre-touched buffers, a small
// thread team, the memory-bandwidth roof, and register_case(), which runs every registered
// implementation of a family on one case. No file here names a kernel: implementations come from
// the registry, so a new registry entry is benchmarked with no change in bench/.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/baselines.h"
#include "optimized/thread_pool.h"
#include "posenc/registry.h"

namespace posenc::bench {

// True under --posenc_smoke: tiny shapes and short roof measurements, so CI runs every benchmark
// once in seconds.
bool smoke();
void set_smoke(bool on);
// This machine's CPU as /proc/cpuinfo names it ("unknown" without one).
std::string cpu_name();

// The thread counts every case runs at.
inline constexpr int kThreadCounts[] = {1, 2};

// Memory for one case. Every buffer is its own 2 MiB-aligned mapping advised for huge pages. With
// `touch`, every byte is written before any kernel sees it: a first-touch page fault costs ~12 µs
// per 4 KiB on these VMs and must stay out of the timed loop. Without `touch` (planning which
// implementations support a case) the mappings only reserve address space.
class Buffers {
 public:
  explicit Buffers(bool touch) : touch_(touch) {}
  bool touching() const { return touch_; }
  ~Buffers();
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  // Row-major f32 with values in [-1, 1) from a fixed pattern.
  Tensor f32(std::initializer_list<int64_t> shape);
  // The same pattern rounded to bf16 or f16 (any float dtype).
  Tensor values(DType dtype, std::initializer_list<int64_t> shape);
  // Row-major f32, zero-filled: outputs.
  Tensor zeros(std::initializer_list<int64_t> shape);
  // f64 outputs, zero-filled.
  Tensor zeros_f64(std::initializer_list<int64_t> shape);
  // i64 positions first + (t % period) for t < n.
  Tensor positions(int64_t n, int64_t first = 0, int64_t period = INT64_MAX);
  // Raw f32 storage for baselines that are not posenc calls (the roof, the GEMM).
  float* floats(int64_t n);

 private:
  void* map(size_t bytes);
  bool touch_;
  std::vector<std::pair<void*, size_t>> mappings_;
};

// Runs f(part, parts) on `parts` threads: the caller plus parts − 1 pre-started workers, which spin
// briefly between jobs so back-to-back passes do not pay a wake-up each.
void run_parallel(int parts, const std::function<void(int part, int parts)>& f);
// [begin, end) of part `part` of n elements split in `parts`, cut on 64-byte boundaries.
std::pair<int64_t, int64_t> split(int64_t n, int part, int parts);

// STREAM-like bandwidth of this machine over `bytes` moved (read + written), at `threads`:
// scale a[i] = s·a[i] in place, f32, over bytes/8 elements. Measured once per (bytes, threads) per
// run and cached; kernels report roof_pct against it.
double scale_roof(double bytes, int threads);
// The same for copy, b[i] = a[i], over two arrays of bytes/8 elements each.
double copy_roof(double bytes, int threads);
// Writing `bytes` without reading them, a[i] = v over bytes/4 elements: the faster of ordinary and
// non-temporal stores. The roof of a case whose bytes are almost all output (Case::write_only).
double write_roof(double bytes, int threads);
// The roof/scale, roof/copy, roof/fill and roof/fill_nontemporal rows, at a few sizes from L1 to
// DRAM.
void register_roof_rows();
// The pool/* rows: the thread pool's hand-off latency, and libgomp's (pool_bench.cc).
void register_pool_rows();

// Work per second of `pass`: after one untimed warm-up pass, the best of five batches that each
// repeat it for at least min_seconds / 5.
double measure_rate(const std::function<void()>& pass, double work, double min_seconds);
// The time measure_rate spends per measurement: short under --posenc_smoke.
double baseline_seconds();

// The LLM shapes of the per-token families: tokens 1 (one decode step), 128, 4096 and 32768
// (prefills) × (8 heads of 64, 32 heads of 128): the small and the large end of head counts and
// widths; the two mixed pairs move the same bytes as these and would double the run. Tiny under
// --posenc_smoke.
struct TokenShape {
  int64_t tokens, heads, head_dim;
};
std::vector<TokenShape> token_shapes();
// Where a run of `tokens` starts: a lone decode token sits at position 4095, a prefill at 0.
inline int64_t first_position(int64_t tokens) { return tokens == 1 ? 4095 : 0; }

// The bias families' shapes, [heads, tq, tk]: one decode query against 32768 keys, a 128-query
// chunk against 4096 keys, a 2048-token prefill; 8 and 64 heads. Queries are the last tq tokens.
struct BiasShape {
  int64_t tq, tk, heads;
  std::string label() const;
};
std::vector<BiasShape> bias_shapes();

// The rope scalings of well-known models, named, for rotary_dim (all seven kinds).
std::vector<std::pair<std::string, RopeScaling>> rope_scalings(int64_t rotary_dim);

// The fp64 reference is slow, so it runs only cases that move at most this much (a ~1 s call).
inline constexpr double kReferenceMaxBytes = 64.0 * (1 << 20);

// One problem of a family: its shape and how to build its buffers.
template <class Call>
struct Case {
  std::string label;  // "t=4096,h=32,d=128,cached": no '/', which separates a row's name parts
  double bytes = 0;   // read + written by one call, from the shapes
  double flops = 0;   // attention: floating-point operations of one call; 0 elsewhere
  // Whether nearly all of `bytes` is output the call writes without reading (a bias or a table):
  // its rows then also report the write roof, and its thread scaling is judged against that roof.
  bool write_only = false;
  // Whether the fp64 reference runs this case. It is slow, so only the smaller cases.
  bool reference = false;
  // Whether only the dispatcher ("<family>/optimized") and the peers run it: a shape too slow to
  // time on every SIMD target (seconds per call each).
  bool dispatcher_only = false;
  // The call over buffers from `buffers`; the runner sets `threads`.
  std::function<Call(Buffers&)> build;
  // Attention: FLOP/s of the baseline library on this shape at `threads`, or null.
  std::function<double(int threads)> baseline_flops;
  // The plain peer (baselines.h): the loop a user would write instead, on this case. Given the
  // call's buffers, and `extra` for anything more it needs (built untimed, e.g. a cos/sin table),
  // returns its pass at `threads`. Null where the family has none.
  std::function<std::function<void(int threads)>(const Call&, Buffers& extra)> plain;
  // Optional: the call prepared once for a loop that repeats it (rope's posenc::RopeStep),
  // returning one step; timed as "<family>/step/<label>" rows beside the dispatcher's per-call
  // cost.
  std::function<std::function<void()>(const Call&)> step;
  // Optional: after a plain pass, the largest error of its output in the family's tolerance unit
  // (the peers make no accuracy promise; this states what their speed buys).
  std::function<double(const Call&)> plain_error;
};

// The plain peers' element type of a posenc dtype (f32, bf16, f16).
inline Element plain_element(DType dtype) {
  return dtype == DType::bf16 ? Element::bf16 : dtype == DType::f16 ? Element::f16 : Element::f32;
}

// The time budget: an implementation whose time per call on a case, predicted from the last case
// it ran at the same thread count, exceeds POSENC_BENCH_BUDGET seconds (default 30) is skipped
// with the reason, so a slow SIMD fallback cannot stretch `make bench` by hours. Cases run in
// ascending size within a family.
double budget_seconds();  // throws posenc::Error on a malformed POSENC_BENCH_BUDGET
std::optional<std::string> over_budget(const std::string& impl, int threads, const void* case_key,
                                       double work);
void record_speed(const std::string& impl, int threads, const void* case_key, double work,
                  double seconds_per_call);

// A benchmark that could not run its call (it threw): posenc_bench then exits with status 1.
void note_failure();
bool any_failure();

// The buffers of the most recent case stay alive across the repeated calls Google Benchmark makes
// and across implementations, which run one after another on the same case.
class CaseSlot {
 public:
  template <class Call>
  const Call& get(const Case<Call>& c) {
    if (key_ != &c) {
      call_.reset();
      buffers_.reset();  // free the previous case before allocating this one
      buffers_ = std::make_unique<Buffers>(true);
      call_ = std::make_shared<Call>(c.build(*buffers_));
      key_ = &c;
    }
    return *std::static_pointer_cast<Call>(call_);
  }

 private:
  const void* key_ = nullptr;
  std::unique_ptr<Buffers> buffers_;
  std::shared_ptr<void> call_;
};
CaseSlot& case_slot();

// The counters of every row whose calls move `bytes`: bytes_per_second, roof_pct (of the scale
// roof at the same bytes and threads), roof_GBps and copy_GBps (the two roofs), and for a
// write-only case write_GBps (the write roof).
void report_bytes(benchmark::State& state, double bytes, int threads, bool write_only);
// Measures (and caches) the roofs report_bytes will read, so that no roof runs inside a timed loop.
void measure_roofs(double bytes, int threads, bool write_only);

// The body of one benchmark row: `impl` (a registry entry, or a plugin's kernel) on case `c` at
// `threads`. Reports bytes_per_second, roof_pct (of the scale roof at the same bytes and threads),
// roof_GBps and copy_GBps (the two roofs); with flops, flops_per_second; with a baseline, gemm_pct
// and gemm_GFLOPs; for a threaded registry kernel, parts.
template <class Call>
void run_case(benchmark::State& state, const Case<Call>& c, const Impl<Call>& impl, int threads) {
  auto skip = [&](const std::string& why) { state.SkipWithError(why.c_str()); };
  if (std::string why = impl.unavailable_reason(); !why.empty()) return skip("unavailable: " + why);
  const double work = c.flops > 0 ? c.flops : c.bytes;
  if (auto why = over_budget(impl.name, threads, &c, work)) return skip(*why);

  if (&impl == &reference_impl<Call>()) state.SetLabel("reference");  // for report.py
  Call call = case_slot().get(c);
  call.threads = threads;
  measure_roofs(c.bytes, threads, c.write_only);  // before the timed loop
  const double baseline = c.baseline_flops ? c.baseline_flops(threads) : 0;
  optimized::detail::note_inline();
  try {
    impl.run(call);  // warm-up; a rejected call surfaces here, outside the timed loop
  } catch (const std::exception& e) {
    note_failure();
    return skip(std::string("threw: ") + e.what());
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    for (auto _ : state) impl.run(call);
  } catch (const std::exception& e) {  // a plugin's kernel can fail on any call
    note_failure();
    return skip(std::string("threw while timed: ") + e.what());
  }
  // The parts a threaded registry kernel split the last timed call's last pass into (a plugin's
  // own threads are not seen): report.py tells a 2-thread row that ran the 1-thread code from one
  // that split. Not the warm-up's: it follows the roofs' measurement, when the pool's workers
  // sleep, and a call that splits only while they are awake would show one part.
  const auto& table = implementations<Call>();
  const bool ours = &impl >= table.data() && &impl < table.data() + table.size();
  if (ours && impl.threaded) state.counters["parts"] = optimized::last_threaded_parts();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  record_speed(impl.name, threads, &c, work,
               elapsed.count() / static_cast<double>(state.iterations()));

  using benchmark::Counter;
  report_bytes(state, c.bytes, threads, c.write_only);
  if (c.flops > 0) {
    state.counters["flops_per_second"] = Counter(c.flops, Counter::kIsIterationInvariantRate);
  }
  if (baseline > 0) {
    state.counters["gemm_pct"] =
        Counter(100 * c.flops / baseline, Counter::kIsIterationInvariantRate);
    state.counters["gemm_GFLOPs"] = baseline / 1e9;
  }
}

// The body of a plain row: case `c`'s peer at `threads`, on the same buffers as the kernels.
template <class Call>
void run_plain(benchmark::State& state, const Case<Call>& c, int threads) {
  state.SetLabel("plain");  // for report.py: a peer, not a kernel
  const Call& call = case_slot().get(c);
  Buffers extra(true);
  const std::function<void(int)> pass = c.plain(call, extra);
  measure_roofs(c.bytes, threads, c.write_only);  // before the timed loop
  pass(threads);                                  // warm-up
  for (auto _ : state) pass(threads);
  report_bytes(state, c.bytes, threads, c.write_only);
  if (c.plain_error) state.counters["max_error"] = c.plain_error(call);
}

// The body of a step row: case `c`'s call prepared once at `threads` (Case::step), then stepped.
template <class Call>
void run_step(benchmark::State& state, const Case<Call>& c, int threads) {
  Call call = case_slot().get(c);
  call.threads = threads;
  const std::function<void()> step = c.step(call);
  measure_roofs(c.bytes, threads, c.write_only);  // before the timed loop
  optimized::detail::note_inline();
  step();  // warm-up
  for (auto _ : state) step();
  state.counters["parts"] = optimized::last_threaded_parts();  // as run_case's
  report_bytes(state, c.bytes, threads, c.write_only);
}

// Where register_case sends a family's cases when set, instead of registering their rows:
// `posenc bench --kernel` (tools/) times a plugin's kernels on the same cases.
template <class Call>
std::function<void(std::shared_ptr<const Case<Call>>)>& case_sink() {
  static std::function<void(std::shared_ptr<const Case<Call>>)> sink;
  return sink;
}

// Registers one row per (threads, supporting implementation) of case `c`, named
// "<impl name>/<label>/threads:<n>", its plain peer's rows "<family>/plain/<label>/threads:<n>",
// and with Case::step, "<family>/step/<label>/threads:<n>". The reference runs only cases marked
// `reference`, a case marked `dispatcher_only` runs no other implementation, and an implementation
// that ignores `threads` runs only at 1 thread.
template <class Call>
void register_case(Case<Call> c) {
  auto shared = std::make_shared<const Case<Call>>(std::move(c));
  if (case_sink<Call>()) return case_sink<Call>()(shared);
  // Rows "<family>/<kind>/<label>/threads:<n>" that `run` times, when the case has them.
  const auto register_rows = [&shared](const char* kind, bool present, auto* run) {
    if (!present) return;
    for (int threads : kThreadCounts) {
      const std::string name = std::string(family_name(Call::kFamily)) + "/" + kind + "/" +
                               shared->label + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), [shared, threads, run](benchmark::State& state) {
        run(state, *shared, threads);
      })->UseRealTime();
    }
  };
  register_rows("plain", static_cast<bool>(shared->plain), &run_plain<Call>);
  register_rows("step", static_cast<bool>(shared->step), &run_step<Call>);
  Buffers plan(false);
  const Call probe = shared->build(plan);
  const auto& table = implementations<Call>();
  for (int threads : kThreadCounts) {
    for (const Impl<Call>& impl : table) {
      if (!supports(impl, probe)) continue;
      if (&impl == &reference_impl<Call>() && !shared->reference) continue;
      if (shared->dispatcher_only &&
          impl.name != std::string(family_name(Call::kFamily)) + "/optimized")
        continue;
      if (!impl.threaded && threads != 1) continue;
      const std::string name =
          impl.name + "/" + shared->label + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), [shared, &impl, threads](benchmark::State& state) {
        run_case(state, *shared, impl, threads);
      })->UseRealTime();
    }
  }
}

// Each bench/<family>_bench.cc adds the function that registers its cases; main runs them in
// Family order once the command line is parsed.
bool add_family(Family family, void (*register_family)());
void register_families();

}  // namespace posenc::bench
