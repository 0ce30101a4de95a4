// attention: prefill-shaped self-attention (tq = tk, no mask, no bias), 512 to 4096 tokens,
// 8 heads of 64 and 32 heads of 128 (8 at 4096 tokens), in f32, and in bf16 and f16 (q, k, v and
// out; ",bf16" or ",f16" in the label). 32 heads of 128 at 4096 tokens run in f32 for the
// dispatcher and the peers only (seconds per call). Each shape also runs Eigen's f32 GEMM on the
// same two products (S = QKᵀ, O = SV per head) as the attention/eigen_gemm row; kernels of every
// dtype report gemm_pct against it. Beside them, in f32, the variants: the causal mask, causal with
// a sliding window of 256 positions (window_left = 255, as Mistral and Gemma 2 local layers), and
// Gemma 2's softcap of 50, the log-sum-exp output, Llama 4's chunked local attention (causal in
// chunks of 256 positions), GPT-OSS's sinks and fused ALiBi slopes (",causal",
// ",causal,window_left=255", ",softcap=50", ",lse", ",causal,chunk_size=256", ",sinks", ",alibi" in
// the label); the masked rows' flops count only the visible scores.
// Decode rows ("q=1,tk=…"): one query per head against a long KV cache (4096 and 32768 keys),
// 32 query heads of 128 on 8 kv heads (Llama 3 8B's grouping) and 8 heads of 64, causal (the
// query is the last position, so it sees every key), in f32, bf16, and with each variant.
#include <cmath>
#include <map>
#include <tuple>

#include "bench/baselines.h"
#include "bench/bench.h"

namespace posenc::bench {
namespace {

struct Shape {
  int64_t tokens, heads, dim;
  double flops() const {  // QKᵀ and SV: 2·t·t·d each, per head
    return 4.0 * static_cast<double>(tokens * tokens * dim * heads);
  }
  std::string label() const {
    return "t=" + std::to_string(tokens) + ",h=" + std::to_string(heads) +
           ",d=" + std::to_string(dim);
  }
  auto key() const { return std::tuple(tokens, heads, dim); }
};

// Eigen's GEMM on the shape's products, heads split over the threads.
class EigenGemm {
 public:
  EigenGemm(const Shape& s, int threads) : s_(s), threads_(threads), buffers_(true) {
    q_ = buffers_.f32({s.tokens, s.heads, s.dim}).as<float>();
    k_ = buffers_.f32({s.tokens, s.heads, s.dim}).as<float>();
    v_ = buffers_.f32({s.tokens, s.heads, s.dim}).as<float>();
    out_ = buffers_.floats(s.tokens * s.heads * s.dim);
    for (int i = 0; i < threads; ++i) scores_.push_back(buffers_.floats(s.tokens * s.tokens));
  }
  void operator()() {
    run_parallel(threads_, [&](int part, int parts) {
      const int64_t h0 = s_.heads * part / parts, h1 = s_.heads * (part + 1) / parts;
      eigen_attention_gemm(q_, k_, v_, out_, scores_[part], s_.tokens, s_.tokens, s_.heads, s_.dim,
                           h0, h1);
    });
  }

 private:
  Shape s_;
  int threads_;
  Buffers buffers_;
  float *q_, *k_, *v_, *out_;
  std::vector<float*> scores_;
};

// The naive attention a user would write with Eigen (baselines.h), heads over OpenMP threads.
class EigenNaive {
 public:
  EigenNaive(const Shape& s, int threads) : s_(s), threads_(threads), buffers_(true) {
    q_ = buffers_.f32({s.tokens, s.heads, s.dim}).as<float>();
    k_ = buffers_.f32({s.tokens, s.heads, s.dim}).as<float>();
    v_ = buffers_.f32({s.tokens, s.heads, s.dim}).as<float>();
    out_ = buffers_.floats(s.tokens * s.heads * s.dim);
    for (int i = 0; i < threads; ++i) scores_.push_back(buffers_.floats(s.tokens * s.tokens));
  }
  void operator()() {
    naive_attention(q_, k_, v_, out_, scores_.data(), s_.tokens, s_.tokens, s_.heads, s_.dim,
                    1 / std::sqrt(static_cast<float>(s_.dim)), threads_);
  }

 private:
  Shape s_;
  int threads_;
  Buffers buffers_;
  float *q_, *k_, *v_, *out_;
  std::vector<float*> scores_;
};

// GEMM FLOP/s per (shape, threads): recorded by the eigen_gemm row, which runs first; measured
// here only when a filter left that row out.
std::map<std::tuple<int64_t, int64_t, int64_t, int>, double>& gemm_rates() {
  static std::map<std::tuple<int64_t, int64_t, int64_t, int>, double> rates;
  return rates;
}

double gemm_rate(const Shape& s, int threads) {
  auto key = std::tuple_cat(s.key(), std::tuple(threads));
  auto [it, inserted] = gemm_rates().try_emplace(key, 0.0);
  if (inserted) {
    EigenGemm gemm(s, threads);
    it->second = measure_rate(std::ref(gemm), s.flops(), baseline_seconds());
  }
  return it->second;
}

// The attention/eigen_gemm rows (label "baseline": the GEMM rate yardstick) and the
// attention/eigen_naive rows (label "naive": the peer kernels are timed against).
void register_gemm_rows(const Shape& s) {
  for (int threads : kThreadCounts) {
    const std::string name =
        "attention/eigen_naive/" + s.label() + "/threads:" + std::to_string(threads);
    benchmark::RegisterBenchmark(name.c_str(), [s, threads](benchmark::State& state) {
      state.SetLabel("naive");
      EigenNaive naive(s, threads);
      naive();  // warm-up
      for (auto _ : state) naive();
      state.counters["flops_per_second"] =
          benchmark::Counter(s.flops(), benchmark::Counter::kIsIterationInvariantRate);
    })->UseRealTime();
  }
  for (int threads : kThreadCounts) {
    const std::string name =
        "attention/eigen_gemm/" + s.label() + "/threads:" + std::to_string(threads);
    benchmark::RegisterBenchmark(name.c_str(), [s, threads](benchmark::State& state) {
      state.SetLabel("baseline");  // for report.py: a yardstick, not a kernel
      EigenGemm gemm(s, threads);
      gemm();  // warm-up
      const auto start = std::chrono::steady_clock::now();
      for (auto _ : state) gemm();
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      const double iterations = static_cast<double>(state.iterations());
      gemm_rates()[std::tuple_cat(s.key(), std::tuple(threads))] =
          s.flops() * iterations / elapsed.count();
      state.counters["flops_per_second"] =
          benchmark::Counter(s.flops(), benchmark::Counter::kIsIterationInvariantRate);
    })->UseRealTime();
  }
}

// The variant of a row: none (plain attention), or the call's variant fields.
struct Variant {
  Mask mask = Mask::none;
  int64_t window_left = -1;
  int softcap = 0;
  bool lse = false;
  int64_t chunk_size = 0;  // with causal
  bool sinks = false, alibi = false;

  std::string label() const {
    std::string str = mask == Mask::causal ? ",causal" : "";
    if (window_left >= 0) str += ",window_left=" + std::to_string(window_left);
    if (softcap > 0) str += ",softcap=" + std::to_string(softcap);
    if (lse) str += ",lse";
    if (chunk_size > 0) str += ",chunk_size=" + std::to_string(chunk_size);
    if (sinks) str += ",sinks";
    if (alibi) str += ",alibi";
    return str;
  }
  void apply(AttentionCall& call, Buffers& b) const {
    call.mask = mask;
    call.window_left = window_left;
    call.softcap = softcap;
    if (lse) call.lse = b.zeros({call.q.shape[0], call.q.shape[1]});
    call.chunk_size = chunk_size;
    const int64_t heads = call.q.shape[1];
    if (sinks) {  // GPT-OSS's sinks are of the scores' order
      call.sinks = b.zeros({heads});
      for (int64_t h = 0; h < heads; ++h) call.sinks->as<float>()[h] = 0.25f * h - 1;
    }
    if (alibi) {  // Press's slopes
      call.alibi_slopes = b.zeros({heads});
      for (int64_t h = 0; h < heads; ++h)
        call.alibi_slopes->as<float>()[h] = std::exp2(-8.0f * (h + 1) / heads);
    }
  }
  // The share of the t × t scores the mask leaves visible (query i sees keys max(0, i − w) … i,
  // or its chunk's keys up to i).
  double visible_share(int64_t t) const {
    if (mask == Mask::none && window_left < 0) return 1;
    double visible = 0;
    for (int64_t i = 0; i < t; ++i) {
      int64_t seen = window_left < 0 ? i + 1 : std::min(i, window_left) + 1;
      if (chunk_size > 0) seen = std::min(seen, i % chunk_size + 1);
      visible += static_cast<double>(seen);
    }
    return visible / (static_cast<double>(t) * static_cast<double>(t));
  }
};

// q [tq, hq, dim] against k and v [tk, hkv, dim] of `dtype`, with the variant's fields.
AttentionCall attention_call(Buffers& b, DType dtype, int64_t tq, int64_t tk, int64_t hq,
                             int64_t hkv, int64_t dim, const Variant& variant) {
  AttentionCall call;
  call.q = b.values(dtype, {tq, hq, dim});
  call.k = b.values(dtype, {tk, hkv, dim});
  call.v = b.values(dtype, {tk, hkv, dim});
  call.out = dtype == DType::f32 ? b.zeros({tq, hq, dim}) : b.values(dtype, {tq, hq, dim});
  variant.apply(call, b);
  return call;
}

Case<AttentionCall> attention_case(const Shape& s, DType dtype, Variant variant = {}) {
  const double elements = static_cast<double>(s.tokens * s.heads * s.dim);
  const std::string suffix = dtype == DType::f32 ? "" : std::string(",") + dtype_name(dtype);
  const double flops = s.flops() * variant.visible_share(s.tokens);
  return {
      .label = s.label() + suffix + variant.label(),
      .bytes = 4 * static_cast<double>(dtype_size(dtype)) * elements,  // q, k, v read, out written
      .flops = flops,
      .reference = s.flops() <= 6e8,  // only t=512, h=8, d=64: ~2 s per call in fp64
      .build =
          [s, dtype, variant](Buffers& b) {
            return attention_call(b, dtype, s.tokens, s.tokens, s.heads, s.heads, s.dim, variant);
          },
      .baseline_flops = [s](int threads) { return gemm_rate(s, threads); },
  };
}

// One decode step: tq queries per head against tk cached keys and values.
struct DecodeShape {
  int64_t tq, tk, hq, hkv, dim;
  std::string label() const {
    return "q=" + std::to_string(tq) + ",tk=" + std::to_string(tk) + ",h=" + std::to_string(hq) +
           "/" + std::to_string(hkv) + ",d=" + std::to_string(dim);
  }
};

Case<AttentionCall> decode_case(const DecodeShape& s, DType dtype, Variant variant) {
  const std::string suffix = dtype == DType::f32 ? "" : std::string(",") + dtype_name(dtype);
  // Keys a windowed query sees: the last window_left + 1.
  const int64_t seen = variant.window_left < 0 ? s.tk : std::min(s.tk, variant.window_left + 1);
  const double kv = static_cast<double>(2 * seen * s.hkv * s.dim);
  const double qo = static_cast<double>(2 * s.tq * s.hq * s.dim);
  return {
      .label = s.label() + suffix + variant.label(),
      .bytes = static_cast<double>(dtype_size(dtype)) * (kv + qo),  // the keys and values it reads
      .flops = 4.0 * static_cast<double>(s.tq * seen * s.hq * s.dim),
      .reference = s.tk <= 4096,
      .build =
          [s, dtype, variant](Buffers& b) {
            return attention_call(b, dtype, s.tq, s.tk, s.hq, s.hkv, s.dim, variant);
          },
  };
}

void register_attention() {
  std::vector<Shape> shapes;
  if (smoke()) {
    shapes = {{64, 2, 32}};
  } else {
    // 32 heads of 128 at 4096 tokens would take ~20 s per call for each SIMD target; 8 heads
    // of 128 measure the same per-head work.
    shapes = {{512, 8, 64},    {512, 32, 128}, {1024, 8, 64},
              {1024, 32, 128}, {4096, 8, 64},  {4096, 8, 128}};
  }
  if (!smoke()) {  // issue 18's largest shape: the dispatcher against both peers
    const Shape s{4096, 32, 128};
    register_gemm_rows(s);
    Case<AttentionCall> c = attention_case(s, DType::f32);
    c.dispatcher_only = true;
    register_case(std::move(c));
  }
  for (const Shape& s : shapes) {
    register_gemm_rows(s);
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      register_case(attention_case(s, dtype));
    register_case(attention_case(s, DType::f32, {Mask::causal}));
    register_case(attention_case(s, DType::f32, {Mask::causal, 255}));
    register_case(attention_case(s, DType::f32, {.softcap = 50}));
    register_case(attention_case(s, DType::f32, {.mask = Mask::causal, .chunk_size = 256}));
    register_case(attention_case(s, DType::f32, {.sinks = true}));
    register_case(attention_case(s, DType::f32, {.alibi = true}));
    register_case(attention_case(s, DType::f32, {.lse = true}));
  }
  std::vector<DecodeShape> decodes;
  if (smoke()) {
    decodes = {{1, 600, 4, 2, 32}};
  } else {
    decodes = {
        {1, 4096, 8, 8, 64}, {1, 4096, 32, 8, 128}, {1, 32768, 8, 8, 64}, {1, 32768, 32, 8, 128}};
  }
  for (const DecodeShape& s : decodes) {
    register_case(decode_case(s, DType::f32, {Mask::causal}));
    register_case(decode_case(s, DType::bf16, {Mask::causal}));
    register_case(decode_case(s, DType::f32, {Mask::causal, 255}));
    register_case(decode_case(s, DType::f32, {.mask = Mask::causal, .softcap = 50}));
    register_case(decode_case(s, DType::f32, {.mask = Mask::causal, .lse = true}));
  }
}

const bool registered = add_family(Family::attention, register_attention);

}  // namespace
}  // namespace posenc::bench
