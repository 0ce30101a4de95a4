// The yardsticks kernels are measured against, in the same run: a STREAM-like scale, copy and fill
// (the memory roofs), Eigen's GEMM (the attention FLOP/s ceiling), and the "plain" peers: the loop
// a user would write instead of calling posenc (-O3 -march=native, OpenMP over rows from Debian's
// libgomp). baselines.cc is built with -march=native so all of them use this machine's widest
// vectors, as the Highway kernels do: run posenc_bench where it was built. No posenc function is
// called here (an inline one compiled with -march=native could be the copy the linker keeps).
#pragma once

#include <atomic>
#include <cstdint>

namespace posenc::bench {

// a[i] = s·a[i] for i < n.
void stream_scale(float* a, int64_t n, float s);
// b[i] = a[i] for i < n.
void stream_copy(const float* a, float* b, int64_t n);
// a[i] = v for i < n: with ordinary stores (each line is read before it is written, unless the
// CPU elides that), and with non-temporal ones (written past the caches, as the kernels stream
// outputs larger than the last-level cache).
void stream_fill(float* a, int64_t n, float v);
void stream_fill_nontemporal(float* a, int64_t n, float v);

// The compute roof's loop: `rounds` of kFmaChains independent f32 multiply-adds on this machine's
// widest vectors (fma_lanes() lanes each), and no memory traffic. Returns the lanes' sum, so that
// the work is kept.
inline constexpr int kFmaChains = 12;  // ≥ FMA latency × FMA pipes on current x86 cores
int fma_lanes();
float fma_chains(int64_t rounds);

// Eigen's single-precision GEMM on attention's two products, for heads [h0, h1): per head
// S = Q_h·K_hᵀ (tq × tk, into `scores`), then O_h = S·V_h. q and out are [tq, heads, d], k and v
// [tk, heads, d], all row-major.
void eigen_attention_gemm(const float* q, const float* k, const float* v, float* out, float* scores,
                          int64_t tq, int64_t tk, int64_t heads, int64_t d, int64_t h0, int64_t h1);

// ---- Plain peers. `threads` > 1 runs an OpenMP parallel for (static schedule) over the rows
// named; 1 runs the same loop on the calling thread. Elements are f32, bf16 (rounded to nearest
// even by integer arithmetic, as c10::BFloat16 does) or f16 (_Float16).

enum class Element { f32, bf16, f16 };

// rope, half-split, in place: q [tokens, heads, head_dim], rotated by the f32 cos/sin table rows
// [position, head_dim/2] (a cache built once). OpenMP over tokens.
void plain_rope(void* q, Element e, int64_t tokens, int64_t heads, int64_t head_dim,
                const int64_t* positions, const float* cos, const float* sin, int threads);

// ALiBi bias [heads, tq, tk] = −slope_h·|q_pos − k_pos| (causal: −∞ where k_pos > q_pos), the
// slopes given in f32. OpenMP over the heads·tq rows.
void plain_alibi(void* bias, Element e, const float* slopes, int64_t heads, const int64_t* q_pos,
                 int64_t tq, const int64_t* k_pos, int64_t tk, bool causal, int threads);

// T5 bias [heads, tq, tk] = table[bucket(k_pos − q_pos), h], table [buckets, heads]: each call
// first computes the bucket of every relative position between the positions' extremes
// (Hugging Face's float formula), then writes each row by lookup. OpenMP over the heads·tq rows.
void plain_t5(void* bias, Element e, const void* table, int64_t buckets, int64_t heads,
              bool bidirectional, int64_t max_distance, const int64_t* q_pos, int64_t tq,
              const int64_t* k_pos, int64_t tk, int threads);

// Sinusoidal: out[t, 2i] = (x[t, 2i] +) sinf(p·ω_i), out[t, 2i+1] = (x +) cosf(p·ω_i) in f32
// (libm's sinf/cosf of the f32 angle, ω_i = base^(−2i/width) rounded to f32); x and positions
// may be null (then the table PE[0:tokens]). OpenMP over tokens.
void plain_sinusoidal(void* out, const void* x, Element e, const int64_t* positions, int64_t tokens,
                      int64_t width, double base, int threads);

// A naive attention with Eigen, f32, no mask: per head S = scale·Q_h·K_hᵀ, a row softmax, then
// O_h = S·V_h. Heads over OpenMP threads; `scores` holds one tq × tk matrix per thread.
void naive_attention(const float* q, const float* k, const float* v, float* out,
                     float* const* scores, int64_t tq, int64_t tk, int64_t heads, int64_t d,
                     float scale, int threads);

// Spins until `flag` == value, at most 1 s (so a pool that ran the other part inline, after this
// one, cannot hang a bench).
void wait_for_part(const std::atomic<uint64_t>& flag, uint64_t value);

// An OpenMP parallel region on `threads` threads whose thread 0 waits (wait_for_part) until
// thread 1 has started: the fork/join a plain OpenMP loop pays per call (pool_bench.cc's peer).
void omp_handoff(int threads);

}  // namespace posenc::bench
