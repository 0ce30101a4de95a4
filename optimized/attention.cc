// attention: softmax(scale·q·kᵀ + bias + mask)·v, flash-style. A work item is one kv head and a
// block of queries, for every query head that reads that kv head (grouped-query attention reads
// each key and value block once for the whole group): kQueryRows rows in all. It walks the key
// blocks in order, computing the block's scores q·kᵀ, the online softmax (running maximum,
// rescaled sum and accumulator) and the block's p·v, all with Highway. The two products run in
// register tiles (Product) over keys and values that each thread packs once per kv head
// (PackBlock), so the packing is paid once per head rather than once per work item. Work items
// are split across threads, and every row is computed the same way whichever thread runs it, so
// the output is bitwise identical for every thread count.
//
// Split-KV decode: with a few queries (tq ≤ kSplitQueries) and a long KV cache (tk ≥
// 2·kSplitKeys), a work item alone would be one thread's walk over every key, and a call with
// fewer kv heads than threads would leave threads idle. Such a call splits its keys into blocks
// of kSplitKeys, a size fixed whatever the thread count: each (work item, key split) computes its
// rows' partial maximum, sum and accumulator, as the whole walk would over those keys, into a
// buffer; a second pass merges each row's splits in their order, in fp64, and finishes the row as
// the whole walk does (FinishRow). Which thread ran a split changes nothing.
//
// Over 600 lines: the plan, the scratch, the fast path, the exact path and split-KV's passes are
// one kernel, each reading the others' state.
//
// The fast path handles rows whose visible scores are finite (or −∞ from the bias) and whose
// visible values are finite. Masked keys (causal, sliding window, chunks: AttentionCall::visible)
// contribute nothing: their scores become −∞ and their p exactly 0, key blocks that no row of a
// work item sees are skipped, and value rows holding NaN or ∞ (an unused KV-cache slot) are zeroed
// before the product reads them. Any other row — a NaN or +∞ score, an f32 overflow, a non-finite
// visible value — is recomputed in fp64 by exact_row, which keeps the contract's edge rules (NaN
// rows, +∞ scores, …). So is a row whose largest score exceeds 2^20, where f32 cannot tell the
// scores apart.
//
// Fused ALiBi: each block's term slope·(−|q_pos − k_pos|) is one f32 product, the contract's own
// rounding; with a bias too, the two are summed exactly as hi + lo (Knuth's TwoSum), hi taking the
// bias's place and lo added to the exponent, so the sum costs no accuracy where it is large (long
// distances). Sinks are folded in at the end of a row: with m the row's maximum and l its sum,
// l + e^(sink − m) when sink ≤ m, else the accumulator scaled by e^(m − sink) over l·e^(m − sink)
// + 1, so the sink is part of the maximum and never overflows.
//
// bf16 and f16 calls run the same f32 path: q, k, v and the bias are promoted to f32 as they are
// packed (exact), and each output is rounded once, to nearest even, from its f32 value. The f32
// path's error (below) is far under an ulp of those dtypes (2^16 and 2^13 f32 ulps of vmax), so the
// result is the reference's grid point or its neighbour: within the contract's 1 unit (kernel.h).
//
// Accuracy, in the family's unit U = ulp(vmax)·(1 + σ), σ = |scale|·‖q_i‖·kmax; u = 2^-24, and
// u·vmax ≤ ulp(vmax). Sources of error in the fast path:
//   scores: the f32 dot product over d (≤ d·u·σ), the scale's rounding and the one rounding of
//     scale·qk + (bias − max) (≤ 2u·σ plus u·|exponent|, which matters only where p is not tiny);
//     a score error δ moves the output by at most 2·δ·vmax, so ≤ 2(d + 2)·U;
//   exp: Highway's Exp and SoftmaxExp are within 1 ulp, a relative error 2u of each p, ≤ 4·U
//     (SoftmaxExp's zeros below e^−87 add under 2^−125 per key);
//   sums: p·v is summed in registers, Bk = 128 terms in sequence (one FMA each), then block by
//   block
//     into the accumulator (⌈tk/Bk⌉ roundings); the running sum in N lanes then across them.
//     Together ≤ (Bk + Bk/N + 4⌈tk/Bk⌉ + 2)·U. The rescaling by exp(old max − new max) applies
//     the same rounded factor to both sums, so its error cancels but for the two products.
// The worst case thus grows with d and tk (about 650·U at d = 128, tk = 4096 on the scalar
// target) and no constant bounds it; rounding errors do not conspire, though. Modelled as
// independent and zero-mean, the dominant term — uniform weights over values of one sign, so
// every partial sum grows — has a standard deviation of about √Bk·u·vmax/4 ≈ 3·U. The stated
// bound, 32·U, is ten of those; the worst measured over 732 problems on every target (d up to
// 512, tk up to 16384, uniform and peaky weights, biases to ±40, causal, GQA, layouts) is 7.0·U.
#ifndef POSENC_OPTIMIZED_ATTENTION_SHARED
#define POSENC_OPTIMIZED_ATTENTION_SHARED
#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/reusable.h"
#include "optimized/thread_pool.h"

namespace posenc::optimized::attention_detail {

inline constexpr int64_t kQueryRows = 64;  // rows of a work item: (query head, query) pairs
inline constexpr int64_t kKeyBlock = 128;  // keys per block; a multiple of every vector width
inline constexpr int64_t kMaxLanes = 16;   // widest f32 vector (AVX-512)
// Fewest rows for which transposing a key block pays (Plan::pack_keys).
inline constexpr int64_t kPackRows = 16;
// Split-KV decode (above): keys per split, and the most queries a split call has.
inline constexpr int64_t kSplitKeys = 2 * kKeyBlock;
inline constexpr int64_t kSplitQueries = 4;
// Rows whose largest score exceeds this in magnitude take the exact path.
inline constexpr float kLargestScore = 1 << 20;

inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// The passes of a call: one walk over every key (whole), or split-KV's two (split, then merge).
enum class Pass : uint8_t { whole, split, merge };

// What every work item reads, prepared once per call.
struct Plan {
  const AttentionCall* call = nullptr;
  int64_t tq = 0, tk = 0, hq = 0, group = 0, d = 0, dv = 0;
  // A work item: up to heads_per_item query heads of one group × up to queries_per_item queries.
  int64_t heads_per_item = 0, head_chunks = 0, queries_per_item = 0, query_blocks = 0;
  int64_t key_blocks = 0;
  // Split-KV: splits of kSplitKeys keys (1: none), and each partial's floats: per row its maximum,
  // sum, exceptional flag and ldacc accumulator columns.
  int64_t splits = 1, split_rows = 0, ldacc = 0, partial_floats = 0;
  // The splits [first_split, first_split + seen_splits) hold every key the mask and window let
  // some query see: the others are never walked.
  int64_t first_split = 0, seen_splits = 0;
  float scale = 0;
  bool softcapped = false;  // logits softcap·tanh(scale·qk / softcap)
  float softcap = 0, scale_over_cap = 0;
  bool causal = false, explicit_positions = false;
  int64_t window = -1;                        // window_left
  int64_t chunk = 0;                          // chunk_size
  bool masked = false;                        // causal, windowed or chunked: positions matter
  bool positional = false;                    // masked or fused ALiBi: positions are kept
  std::vector<int64_t> q_pos;                 // positional: every query's position
  std::vector<int32_t> k_pos;                 // positional, explicit positions, padded for loads
  std::vector<int64_t> block_min, block_max;  // positional: key positions' range per key block
  std::vector<float> slopes, sinks;           // per query head, when given

  uint64_t id;  // unique to this call: a thread's packed keys and values belong to one call
  // Whether items transpose their key blocks for the score product (PackBlock), or, with fewer
  // than kPackRows rows, read the keys in place (DotScores).
  bool pack_keys = false;

  explicit Plan(const AttentionCall& c) : call(&c), id(next_id()) {
    tq = c.q.shape[0];
    hq = c.q.shape[1];
    d = c.q.shape[2];
    tk = c.k.shape[0];
    group = hq / c.k.shape[1];
    dv = c.v.shape[2];
    heads_per_item = std::min(group, kQueryRows);
    head_chunks = (group + heads_per_item - 1) / heads_per_item;
    queries_per_item = kQueryRows / heads_per_item;
    query_blocks = (tq + queries_per_item - 1) / queries_per_item;
    key_blocks = (tk + kKeyBlock - 1) / kKeyBlock;
    pack_keys = heads_per_item * std::min(tq, queries_per_item) >= kPackRows;
    if (tq >= 1 && tq <= kSplitQueries && tk >= 2 * kSplitKeys) {
      splits = (tk + kSplitKeys - 1) / kSplitKeys;
      split_rows = heads_per_item * std::min(tq, queries_per_item);
      ldacc = round_up(dv, kMaxLanes);
      partial_floats = split_rows * (3 + ldacc);
      seen_splits = splits;
    }
    scale = static_cast<float>(c.resolved_scale());
    softcapped = c.softcap > 0;
    if (softcapped) {  // a cap beyond f32's range makes NaN scores: such rows take the exact path
      softcap = static_cast<float>(c.softcap);
      scale_over_cap = static_cast<float>(c.resolved_scale() / c.softcap);
    }
    causal = c.mask == Mask::causal;
    explicit_positions = c.q_positions.has_value();
    window = c.window_left;
    chunk = c.chunk_size;
    masked = causal || c.windowed() || c.chunked();
    for (int64_t h = 0; h < hq && c.alibi_slopes; ++h)
      slopes.push_back(c.alibi_slopes->as<float>()[c.alibi_slopes->offset(h)]);
    for (int64_t h = 0; h < hq && c.sinks; ++h) sinks.push_back(static_cast<float>(c.sink(h)));
    positional = masked || c.alibi_slopes.has_value();
    if (!positional) return;
    q_pos.resize(tq);
    for (int64_t i = 0; i < tq; ++i) q_pos[i] = c.q_position(i);
    if (explicit_positions) {  // positions lie in [0, 2^24]: int32 is exact
      k_pos.assign(round_up(tk, kMaxLanes), 0);
      for (int64_t j = 0; j < tk; ++j) k_pos[j] = static_cast<int32_t>(c.k_position(j));
    }
    block_min.resize(key_blocks);
    block_max.resize(key_blocks);
    for (int64_t b = 0; b < key_blocks; ++b) {
      const int64_t j0 = b * kKeyBlock, j1 = std::min(tk, j0 + kKeyBlock);
      block_min[b] = std::numeric_limits<int64_t>::max();
      block_max[b] = std::numeric_limits<int64_t>::min();
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t p = c.k_position(j);
        block_min[b] = std::min(block_min[b], p);
        block_max[b] = std::max(block_max[b], p);
      }
    }
    if (splits > 1) {
      const auto [lo, hi] = std::minmax_element(q_pos.begin(), q_pos.end());
      const int64_t newest = newest_visible(*hi), oldest = oldest_visible(*lo);
      int64_t first = splits, last = 0;
      for (int64_t b = 0; b < key_blocks; ++b) {
        if (block_min[b] > newest || block_max[b] < oldest) continue;
        first = std::min(first, b * kKeyBlock / kSplitKeys);
        last = std::max(last, b * kKeyBlock / kSplitKeys + 1);
      }
      first_split = first < last ? first : 0;
      seen_splits = std::max<int64_t>(last - first, 0);
    }
  }

  static uint64_t next_id() {
    static std::atomic<uint64_t> counter{0};
    return ++counter;
  }

  int64_t items() const { return hq / group * head_chunks * query_blocks; }
  bool split() const { return splits > 1; }

  // The earliest key position the window and the chunk let a query at position qp see (−1: every
  // key); nondecreasing in qp.
  int64_t oldest_visible(int64_t qp) const {
    // max(qp − window, −1) without computing qp − window where it overflows (window near int64's
    // largest, qp < 0 when tq > tk).
    int64_t oldest = window < 0 ? -1 : std::max<int64_t>(qp, window - 1) - window;
    if (chunk > 0) oldest = std::max(oldest, call->chunk_of(qp) * chunk);
    return oldest;
  }
  // The latest key position the mask and the chunk let it see (kUnbounded: every key);
  // nondecreasing in qp.
  static constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  int64_t newest_visible(int64_t qp) const {
    int64_t newest = causal ? qp : kUnbounded;
    if (chunk > 0) newest = std::min(newest, call->chunk_of(qp) * chunk + (chunk - 1));
    return newest;
  }

  // Work item → query heads [h0, h1) of one group and queries [i0, i1). Query blocks alternate
  // from both ends so that a contiguous range of items mixes cheap early rows and costly late
  // ones under a causal mask.
  void item(int64_t index, int64_t& h0, int64_t& h1, int64_t& i0, int64_t& i1) const {
    const int64_t kv_head = index / (head_chunks * query_blocks);
    const int64_t chunk = index / query_blocks % head_chunks, r = index % query_blocks;
    h0 = kv_head * group + chunk * heads_per_item;
    h1 = std::min(h0 + heads_per_item, (kv_head + 1) * group);
    const int64_t block = r % 2 == 0 ? r / 2 : query_blocks - 1 - r / 2;
    i0 = block * queries_per_item;
    i1 = std::min(tq, i0 + queries_per_item);
  }
};

// One output row in fp64, for rows the fast path does not cover. Two passes over the row, the
// scores and their maximum, then the weights exp(score − maximum), and each output column summed
// over the weights; written apart from the reference, which the differential tests compare it
// with. (An online softmax would not do: its rescaling can leave an infinite value's weight
// nonzero where the contract's exp(score − maximum) underflows to 0 and makes 0·∞ = NaN.) The
// edge rules follow from the arithmetic: a NaN score makes the row NaN; a +∞ score makes the sum
// NaN (exp(∞ − ∞)), and a row whose sum is not positive (no visible key, or that NaN) is zeros.
// Its lse is NaN, +∞ (the maximum) and −∞ (ln 0) in those cases, else maximum + ln(sum).
inline void exact_row(const AttentionCall& call, int64_t h, int64_t i) {
  const Tensor &q = call.q, &k = call.k, &v = call.v, &out = call.out;
  const int64_t tk = k.shape[0], d = q.shape[2], dv = v.shape[2];
  const int64_t kvh = h / (q.shape[1] / k.shape[1]);
  const double scale = call.resolved_scale(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> qrow(d);
  for (int64_t c = 0; c < d; ++c) qrow[c] = load(q, q.offset(i, h, c));
  std::vector<int64_t> keys;  // visible keys whose score is not −∞
  std::vector<double> weight;
  double top = -inf;
  for (int64_t j = 0; j < tk; ++j) {
    if (!call.visible(i, j)) continue;
    double dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += qrow[c] * load(k, k.offset(j, kvh, c));
    const double score = call.logit(scale * dot) + call.alibi(h, i, j) +
                         (call.bias ? load(*call.bias, call.bias->offset(h, i, j)) : 0.0);
    if (std::isnan(score)) {
      for (int64_t c = 0; c < dv; ++c) store(out, out.offset(i, h, c), std::nan(""));
      if (call.lse) store(*call.lse, call.lse->offset(i, h), std::nan(""));
      return;
    }
    if (score == -inf) continue;
    keys.push_back(j);
    weight.push_back(score);
    top = std::max(top, score);
  }
  const double sink = call.sink(h);  // in the maximum and the sum, with no value
  top = std::max(top, sink);
  double total = sink == -inf ? 0 : std::exp(sink - top);
  for (double& w : weight) total += (w = std::exp(w - top));
  for (int64_t c = 0; c < dv; ++c) {
    double sum = 0;
    for (size_t n = 0; n < keys.size(); ++n) sum += weight[n] * load(v, v.offset(keys[n], kvh, c));
    store(out, out.offset(i, h, c), total > 0 ? sum / total : 0.0);
  }
  if (call.lse) store(*call.lse, call.lse->offset(i, h), top == inf ? inf : top + std::log(total));
}

// Per-thread buffers, 64-byte aligned; rows padded to whole vectors. Each thread keeps its own
// across calls (fresh ones would fault their pages in on every call, about 12 µs per 4 KiB here);
// the leading dimensions always follow the call, only the capacities grow. The largest is the
// packed keys and values: one kv head's, in f32, for a whole walk (tk·(d + dv) floats, 4 MiB at
// tk = 4096, d = dv = 128), or one split's.
class Scratch {
 public:
  int64_t ldq = 0, lds = kKeyBlock, ldacc = 0;
  float *q, *s, *acc, *t, *k, *bias_row, *out_row;
  // Key blocks [packed_from, …) of one kv head, packed for the products (PackBlock): keys
  // transposed, [d][kKeyBlock] per block, and values [kKeyBlock][ldacc]; which call, head and first
  // block they are, and which blocks are packed.
  float *keys, *values;
  uint64_t packed_call = 0;
  int64_t packed_head = -1, packed_from = 0;
  std::vector<uint8_t> packed;
  float* v;                         // one value block, as rows of ldacc, its non-finite rows zeroed
  std::vector<int64_t> bad_values;  // keys of the current block whose value row is not finite
  float *alibi_row, *alibi_lo;  // fused ALiBi (plus the bias, as hi + lo) for one row's key block
  // Per row: running maximum, running sum, this block's rescaling of the accumulator.
  float m[kQueryRows], l[kQueryRows], alpha[kQueryRows];
  uint8_t exceptional[kQueryRows];
  std::vector<double> merged;  // split-KV: a row's accumulator, merged over its splits

  static Scratch& for_this_thread(const Plan& p) {
    thread_local Scratch scratch;
    scratch.prepare(p);
    return scratch;
  }

 private:
  void prepare(const Plan& p) {
    ldq = p.d;
    ldacc = round_up(p.dv, kMaxLanes);
    q = grow(0, kQueryRows * ldq);
    s = grow(1, kQueryRows * lds);
    acc = grow(2, kQueryRows * ldacc);
    k = grow(3, 4 * p.d);  // up to four key rows converted to f32 (DotScores)
    v = grow(11, kKeyBlock * ldacc);
    bias_row = grow(5, lds);
    out_row = grow(6, ldacc);
    t = grow(7, kQueryRows * ldacc);
    alibi_row = grow(8, lds);
    alibi_lo = grow(9, lds);
    // A whole walk packs every key block of a head; a split its own.
    const int64_t blocks = p.split() ? kSplitKeys / kKeyBlock : p.key_blocks;
    keys = grow(4, p.pack_keys ? blocks * kKeyBlock * p.d : 0);
    values = grow(10, (p.pack_keys ? blocks : 1) * kKeyBlock * ldacc);
  }

  // Buffer `which`, with room for n floats (zeros when new).
  float* grow(int which, int64_t n) {
    if (size_[which] < n) {
      buffer_[which] = hwy::AllocateAligned<float>(static_cast<size_t>(n));
      std::fill(buffer_[which].get(), buffer_[which].get() + n, 0.0f);
      size_[which] = n;
    }
    return buffer_[which].get();
  }

  hwy::AlignedFreeUniquePtr<float[]> buffer_[12];
  int64_t size_[12] = {};
};

}  // namespace posenc::optimized::attention_detail
#endif  // POSENC_OPTIMIZED_ATTENTION_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include <hwy/contrib/math/math-inl.h>
// clang-format on
#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace attention_detail;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;

// Copies n elements with stride `stride` into contiguous dst.
HWY_INLINE void Gather(const float* src, int64_t stride, int64_t n, float* dst) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    for (int64_t c = 0; c < n; ++c) dst[c] = src[c * stride];
  }
}

// bf16 and f16 elements convert in whole vectors by math-inl.h's lowp lanes, on every target
// (Highway 1.0.3's own bf16 DemoteTo truncates, and its emulated f16 conversions make ±∞ and NaN
// finite); a row's tail and strided elements through load() and store().

// Promotes the whole vectors of n contiguous elements of T at src to f32 at dst (exact); returns
// how many it converted.
template <class T>
HWY_INLINE int64_t PromoteVectors(const T* src, int64_t n, float* dst) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t c = 0;
  for (; c + N <= n; c += N) hn::StoreU(lowp::LoadF32(df, src + c), df, dst + c);
  return c;
}

// Rounds the whole vectors of n f32 values at src once to T, to nearest even, into contiguous dst;
// returns how many it converted.
template <class T>
HWY_INLINE int64_t DemoteVectors(const float* src, int64_t n, T* dst) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t c = 0;
  for (; c + N <= n; c += N) lowp::StoreF32(df, hn::LoadU(df, src + c), dst + c);
  return c;
}

// Elements at + c·stride, c < n, of a float view of any dtype, as f32 (exact) into contiguous dst.
HWY_INLINE void ToF32(const Tensor& t, int64_t at, int64_t stride, int64_t n, float* dst) {
  int64_t c = 0;
  if (t.dtype == DType::f32) {
    Gather(t.as<float>() + at, stride, n, dst);
    return;
  }
  if (stride == 1 && t.dtype == DType::bf16) {
    c = PromoteVectors(t.as<hwy::bfloat16_t>() + at, n, dst);
  } else if (stride == 1 && t.dtype == DType::f16) {
    c = PromoteVectors(t.as<hwy::float16_t>() + at, n, dst);
  }
  for (; c < n; ++c) dst[c] = static_cast<float>(load(t, at + c * stride));
}

// Stores n f32 values from contiguous src at elements at + c·stride of a float view of any dtype,
// each rounded once to nearest even (store() rounds the exact double of an f32 once).
HWY_INLINE void FromF32(const float* src, int64_t n, const Tensor& t, int64_t at, int64_t stride) {
  int64_t c = 0;
  if (t.dtype == DType::f32) {
    float* dst = t.as<float>() + at;
    if (stride == 1) {
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    } else {
      for (; c < n; ++c) dst[c * stride] = src[c];
    }
    return;
  }
  if (stride == 1 && t.dtype == DType::bf16) {
    c = DemoteVectors(src, n, t.as<hwy::bfloat16_t>() + at);
  } else if (stride == 1 && t.dtype == DType::f16) {
    c = DemoteVectors(src, n, t.as<hwy::float16_t>() + at);
  }
  for (; c < n; ++c) store(t, at + c * stride, src[c]);
}

// Whether all n elements of the contiguous row are finite.
HWY_INLINE bool AllFinite(const float* row, int64_t n) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  auto finite = hn::FirstN(df, static_cast<size_t>(N));  // all true
  int64_t c = 0;
  for (; c + N <= n; c += N) finite = hn::And(finite, hn::IsFinite(hn::LoadU(df, row + c)));
  bool ok = hn::AllTrue(df, finite);
  for (; c < n; ++c) ok &= std::isfinite(row[c]);
  return ok;
}

// Rows of a [t, heads, width] view read this far ahead are prefetched: a KV cache's rows of one
// head lie heads·width elements apart, a stride the hardware prefetcher does not follow far.
inline constexpr int64_t kPrefetchRows = 8;
HWY_INLINE void PrefetchRow(const Tensor& t, int64_t j, int64_t h, int64_t rows) {
  if (j >= rows) return;
  const char* row = static_cast<const char*>(t.data) + t.offset(j, h, 0) * dtype_size(t.dtype);
  const int64_t bytes = t.shape[2] * t.strides[2] * static_cast<int64_t>(dtype_size(t.dtype));
  for (int64_t b = 0; b < bytes; b += 64) hwy::Prefetch(row + b);
}

// Rows [j0, j0 + n) of kv head kvh of v as f32 rows of ldacc, zeros past dv, into dst.
HWY_INLINE void CopyValues(const Plan& plan, int64_t kvh, int64_t j0, int64_t n, int64_t ldacc,
                           float* dst) {
  const Tensor& v = plan.call->v;
  for (int64_t j = 0; j < n; ++j) {
    PrefetchRow(v, j0 + j + kPrefetchRows, kvh, plan.tk);
    float* row = dst + j * ldacc;
    ToF32(v, v.offset(j0 + j, kvh, 0), v.strides[2], plan.dv, row);
    std::fill(row + plan.dv, row + ldacc, 0.0f);
  }
}

// Key block kb of kv head kvh packed for the products (items with pack_keys), by the thread that
// needs it, once per call and head for a whole walk (every work item of the head on this thread
// reads it) or per split: the keys transposed to [d][kKeyBlock], the values as rows of ldacc, both
// f32 with zeros past the last key and past dv. Returns the block's slot.
HWY_INLINE int64_t PackBlock(const Plan& plan, Scratch& sc, int64_t kvh, int64_t kb0, int64_t kb) {
  if (sc.packed_call != plan.id || sc.packed_head != kvh || sc.packed_from != kb0) {
    sc.packed_call = plan.id;
    sc.packed_head = kvh;
    sc.packed_from = kb0;
    sc.packed.assign(static_cast<size_t>(plan.key_blocks - kb0), 0);
  }
  const int64_t slot = kb - kb0;
  if (sc.packed[slot]) return slot;
  const Tensor& k = plan.call->k;
  const int64_t d = plan.d, j0 = kb * kKeyBlock, n = std::min(kKeyBlock, plan.tk - j0);
  float* keys = sc.keys + slot * d * kKeyBlock;
  for (int64_t j = 0; j < n; ++j) {
    const float* key = sc.k;
    if (k.dtype == DType::f32 && k.strides[2] == 1) {
      key = k.as<float>() + k.offset(j0 + j, kvh, 0);
    } else {
      ToF32(k, k.offset(j0 + j, kvh, 0), k.strides[2], d, sc.k);
    }
    for (int64_t c = 0; c < d; ++c) keys[c * kKeyBlock + j] = key[c];
  }
  for (int64_t c = 0; n < kKeyBlock && c < d; ++c)
    std::fill(keys + c * kKeyBlock + n, keys + (c + 1) * kKeyBlock, 0.0f);
  CopyValues(plan, kvh, j0, n, sc.ldacc, sc.values + slot * kKeyBlock * sc.ldacc);
  sc.packed[slot] = 1;
  return slot;
}

// The value rows an item without pack_keys reads: in place when they are f32, contiguous and fill
// ldacc (a decode call streams its KV cache once: a copy would only add traffic), else converted.
HWY_INLINE const float* ValueRows(const Plan& plan, Scratch& sc, int64_t kvh, int64_t j0, int64_t n,
                                  int64_t& ld) {
  const Tensor& v = plan.call->v;
  if (v.dtype == DType::f32 && v.strides[2] == 1 && plan.dv == sc.ldacc) {
    ld = v.strides[0];
    return v.as<float>() + v.offset(j0, kvh, 0);
  }
  CopyValues(plan, kvh, j0, n, sc.ldacc, sc.values);
  ld = sc.ldacc;
  return sc.values;
}

// The fused ALiBi terms slope_h·(−|q_pos − k_pos|) of keys [j0, j0 + padded) for query i, each one
// f32 product (the contract's rounding), into sc.alibi_row. With a bias row (f32, `padded` long)
// they are added to it exactly, as hi (alibi_row) + lo (alibi_lo, TwoSum): lo is 0 where hi is not
// finite, and a sum that overflows to −∞ from finite terms becomes NaN, so that it takes the exact
// path instead of passing for a −∞ mask.
HWY_INLINE void AlibiRow(const Plan& plan, Scratch& sc, int64_t h, int64_t i, int64_t j0,
                         int64_t padded, const float* bias) {
  const DF df;
  const DI di;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  // Positions lie in [0, 2^24] (implicit ones in [−tq, 2^24], contract): int32 and f32 are exact.
  const auto qp = hn::Set(di, static_cast<int32_t>(plan.q_pos[i]));
  const auto minus_slope = hn::Set(df, -plan.slopes[h]);  // (−slope)·|Δ| = slope·(−|Δ|)
  const auto neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  for (int64_t c = 0; c < padded; c += N) {
    const auto kp = plan.explicit_positions ? hn::LoadU(di, plan.k_pos.data() + j0 + c)
                                            : hn::Iota(di, static_cast<int32_t>(j0 + c));
    const auto a = hn::Mul(minus_slope, hn::ConvertTo(df, hn::Abs(hn::Sub(qp, kp))));
    if (bias == nullptr) {
      hn::Store(a, df, sc.alibi_row + c);
      continue;
    }
    const auto b = hn::LoadU(df, bias + c);
    const auto hi = hn::Add(b, a);
    const auto b_part = hn::Sub(hi, a), a_part = hn::Sub(hi, b_part);
    const auto lo = hn::Add(hn::Sub(b, b_part), hn::Sub(a, a_part));
    const auto overflow =
        hn::AndNot(hn::Or(hn::Eq(b, neg_inf), hn::Eq(a, neg_inf)), hn::Eq(hi, neg_inf));
    hn::Store(hn::IfThenElse(overflow, hn::Set(df, NAN), hi), df, sc.alibi_row + c);
    hn::Store(hn::IfThenElseZero(hn::IsFinite(hi), lo), df, sc.alibi_lo + c);
  }
}

// The block products, c[rows × cols] = a[rows × depth] · b[depth × cols] with cols a multiple of
// the vector width: a tile of kTileRows rows × kTileVectors vectors of columns lives in registers,
// a's elements broadcast and b's rows loaded whole, and each element of c is one chain of FMAs
// over depth, in order. a is read in place; b is a key or value block PackBlock made.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3  // 32 vector registers: 24 accumulators
inline constexpr int kTileRows = 6, kTileVectors = 4;
#else
inline constexpr int kTileRows = 4, kTileVectors = 2;
#endif

template <int R, int C>
HWY_INLINE void ProductTile(const float* HWY_RESTRICT a, int64_t lda, const float* HWY_RESTRICT b,
                            int64_t ldb, float* HWY_RESTRICT c, int64_t ldc, int64_t depth) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
#if HWY_HAVE_SCALABLE  // no arrays of sizeless vectors: one accumulator at a time
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < C; ++v) {
      auto sum = hn::Zero(df);
      for (int64_t k = 0; k < depth; ++k)
        sum = hn::MulAdd(hn::Set(df, a[r * lda + k]), hn::LoadU(df, b + k * ldb + v * N), sum);
      hn::StoreU(sum, df, c + r * ldc + v * N);
    }
  }
#else
  hn::Vec<DF> acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < C; ++v) acc[r][v] = hn::Zero(df);
  for (int64_t k = 0; k < depth; ++k) {
    hn::Vec<DF> row[C];
    for (int v = 0; v < C; ++v) row[v] = hn::LoadU(df, b + k * ldb + v * N);
    for (int r = 0; r < R; ++r) {
      const auto element = hn::Set(df, a[r * lda + k]);
      for (int v = 0; v < C; ++v) acc[r][v] = hn::MulAdd(element, row[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < C; ++v) hn::StoreU(acc[r][v], df, c + r * ldc + v * N);
#endif
}

// Rows [0, rows) of one column panel of C vectors, in tiles of kTileRows and one smaller tile.
template <int C, int R = kTileRows>
HWY_INLINE void ProductPanel(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                             int64_t ldc, int64_t rows, int64_t depth) {
  if constexpr (R == kTileRows) {
    int64_t r = 0;
    for (; r + R <= rows; r += R)
      ProductTile<R, C>(a + r * lda, lda, b, ldb, c + r * ldc, ldc, depth);
    if (r < rows)
      ProductPanel<C, R - 1>(a + r * lda, lda, b, ldb, c + r * ldc, ldc, rows - r, depth);
  } else if constexpr (R > 0) {
    if (rows == R) {
      ProductTile<R, C>(a, lda, b, ldb, c, ldc, depth);
    } else {
      ProductPanel<C, R - 1>(a, lda, b, ldb, c, ldc, rows, depth);
    }
  }
}

// Out of line: inlined at its three call sites, every tile shape three times over, it made this
// file take clang -O1 with ASan (the fuzz build) 7.5 minutes instead of 3.6 (EMU128's most).
HWY_NOINLINE void Product(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                          int64_t ldc, int64_t rows, int64_t cols, int64_t depth) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t col = 0;
  for (; col + kTileVectors * N <= cols; col += kTileVectors * N)
    ProductPanel<kTileVectors>(a, lda, b + col, ldb, c + col, ldc, rows, depth);
  for (; col < cols; col += N) ProductPanel<1>(a, lda, b + col, ldb, c + col, ldc, rows, depth);
}

// A row's new maximum and this block's sum of p: rescales the running sum and sets alpha.
HWY_INLINE void UpdateRow(Scratch& sc, int64_t r, float new_max, float block_sum) {
  const DF df;
  const float old_max = sc.m[r];
  float total = sc.l[r];
  if (old_max != new_max && old_max != -std::numeric_limits<float>::infinity()) {
    sc.alpha[r] = hn::GetLane(hn::Exp(df, hn::Set(df, old_max - new_max)));
    total *= sc.alpha[r];
  }
  sc.l[r] = total + block_sum;
  sc.m[r] = new_max;
}

// SoftmaxStep where keys [0, limit) are visible (limit > 0) and the score is scale·raw: no bias,
// ALiBi or softcap, the common case, in fewer operations. The first pass keeps only the raw
// products' range and whether one is NaN (scaling is monotonic, so the scores are finite exactly
// when the range's ends scale to finite values), and the weights come from SoftmaxExp.
HWY_INLINE bool PlainSoftmaxStep(const Plan& plan, Scratch& sc, int64_t r, int64_t limit,
                                 int64_t padded) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  float* s = sc.s + r * sc.lds;
  const int64_t full = limit / N * N;
  const auto inf = hn::Set(df, std::numeric_limits<float>::infinity()), neg_inf = hn::Neg(inf);
  auto hi = neg_inf, lo = inf;
  auto nan = hn::Lt(hi, hi);  // all false
  for (int64_t c = 0; c < full; c += N) {
    const auto raw = hn::Load(df, s + c);
    hi = hn::Max(hi, raw);
    lo = hn::Min(lo, raw);
    nan = hn::Or(nan, hn::IsNaN(raw));
  }
  const auto tail = hn::FirstN(df, static_cast<size_t>(limit - full));
  if (full < limit) {
    const auto raw = hn::Load(df, s + full);
    hi = hn::Max(hi, hn::IfThenElse(tail, raw, neg_inf));
    lo = hn::Min(lo, hn::IfThenElse(tail, raw, inf));
    nan = hn::Or(nan, hn::And(tail, hn::IsNaN(raw)));
  }
  const float top = hn::GetLane(hn::MaxOfLanes(df, hi)) * plan.scale;
  const float bottom = hn::GetLane(hn::MinOfLanes(df, lo)) * plan.scale;
  if (!hn::AllFalse(df, nan) || !std::isfinite(top) || !std::isfinite(bottom)) return false;
  const float new_max = std::max({sc.m[r], top, bottom});
  if (std::fabs(new_max) > kLargestScore) return false;
  const auto scale = hn::Set(df, plan.scale), minus_max = hn::Set(df, -new_max);
  auto sum = hn::Zero(df);
  for (int64_t c = 0; c < full; c += N) {
    const auto p = SoftmaxExp(df, hn::MulAdd(hn::Load(df, s + c), scale, minus_max));
    hn::Store(p, df, s + c);
    sum = hn::Add(sum, p);
  }
  if (full < limit) {
    const auto x = hn::MulAdd(hn::Load(df, s + full), scale, minus_max);
    const auto p = SoftmaxExp(df, hn::IfThenElse(tail, x, neg_inf));
    hn::Store(p, df, s + full);
    sum = hn::Add(sum, p);
  }
  for (int64_t c = round_up(limit, N); c < padded; c += N) hn::Store(hn::Zero(df), df, s + c);
  UpdateRow(sc, r, new_max, hn::GetLane(hn::SumOfLanes(df, sum)));
  return true;
}

#if !HWY_HAVE_SCALABLE && HWY_TARGET != HWY_SCALAR
// The lanes of a vector of whole 128-bit blocks summed block-wise into one block.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE hn::Vec128<float> SumOfBlocks(D d, V v) {
  if constexpr (hn::MaxLanes(d) * sizeof(float) > 16) {
    const hn::Half<D> dh;
    return SumOfBlocks(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  } else {
    return v;
  }
}

// The lane sums of a0..a3, in lanes 0..3: two rounds of interleave-and-add halve the lanes of
// four vectors at once (11 shuffles and adds on AVX-512, against 32 for four SumOfLanes).
template <class V>
HWY_INLINE hn::Vec128<float> SumOfLanes4(V a0, V a1, V a2, V a3) {
  const DF df;
  const hn::Repartition<double, DF> dd;
  // Per block: (a0, a1, a0, a1) and (a2, a3, a2, a3) partial sums.
  const auto b01 = hn::Add(hn::InterleaveLower(df, a0, a1), hn::InterleaveUpper(df, a0, a1));
  const auto b23 = hn::Add(hn::InterleaveLower(df, a2, a3), hn::InterleaveUpper(df, a2, a3));
  // Per block: (a0, a1, a2, a3).
  const auto lo = hn::InterleaveLower(dd, hn::BitCast(dd, b01), hn::BitCast(dd, b23));
  const auto hi = hn::InterleaveUpper(dd, hn::BitCast(dd, b01), hn::BitCast(dd, b23));
  return SumOfBlocks(df, hn::Add(hn::BitCast(df, lo), hn::BitCast(df, hi)));
}
#endif

// The scores of an item with few rows, each a dot product of a query row with a key read in
// place: transposing the keys would cost more than these products. Four keys at a time where
// whole vectors cover d: four independent chains, reduced together (SumOfLanes4).
HWY_INLINE void DotScores(const Plan& plan, Scratch& sc, int64_t kvh, int64_t j0, int64_t n,
                          int64_t rows) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df)), d = plan.d, whole = d / N * N;
  const Tensor& k = plan.call->k;
  const bool in_place = k.dtype == DType::f32 && k.strides[2] == 1;
  // Key j's f32 row, prefetching ahead; converted into `buffer` unless read in place.
  const auto key_row = [&](int64_t j, float* buffer) -> const float* {
    PrefetchRow(k, j0 + j + kPrefetchRows, kvh, plan.tk);
    PrefetchRow(plan.call->v, j0 + j, kvh, plan.tk);  // for the p·v product that follows
    if (in_place) return k.as<float>() + k.offset(j0 + j, kvh, 0);
    ToF32(k, k.offset(j0 + j, kvh, 0), k.strides[2], d, buffer);
    return buffer;
  };
  int64_t j = 0;
#if !HWY_HAVE_SCALABLE && HWY_TARGET != HWY_SCALAR
  if (whole == d) {
    for (; j + 4 <= n; j += 4) {
      const float* key[4];
      for (int64_t m = 0; m < 4; ++m) key[m] = key_row(j + m, sc.k + m * plan.d);
      for (int64_t r = 0; r < rows; ++r) {
        const float* q = sc.q + r * sc.ldq;
        auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
        for (int64_t c = 0; c < d; c += N) {
          const auto qc = hn::LoadU(df, q + c);
          a0 = hn::MulAdd(qc, hn::LoadU(df, key[0] + c), a0);
          a1 = hn::MulAdd(qc, hn::LoadU(df, key[1] + c), a1);
          a2 = hn::MulAdd(qc, hn::LoadU(df, key[2] + c), a2);
          a3 = hn::MulAdd(qc, hn::LoadU(df, key[3] + c), a3);
        }
        hn::StoreU(SumOfLanes4(a0, a1, a2, a3), hn::Full128<float>(), sc.s + r * sc.lds + j);
      }
    }
  }
#endif
  for (; j < n; ++j) {
    const float* key = key_row(j, sc.k);
    for (int64_t r = 0; r < rows; ++r) {
      const float* q = sc.q + r * sc.ldq;
      auto sum = hn::Zero(df);
      for (int64_t c = 0; c < whole; c += N)
        sum = hn::MulAdd(hn::LoadU(df, q + c), hn::LoadU(df, key + c), sum);
      float dot = hn::GetLane(hn::SumOfLanes(df, sum));
      for (int64_t c = whole; c < d; ++c) dot += q[c] * key[c];
      sc.s[r * sc.lds + j] = dot;
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    std::fill(sc.s + r * sc.lds + n, sc.s + r * sc.lds + round_up(n, N), 0.0f);
}

// One query row's step of the online softmax over one key block of n keys. Turns the row's raw
// products s[0, n) into p = exp(score − new maximum), rescales the row's sum and sets the
// accumulator's rescaling alpha, and returns false when the row needs the exact path.
HWY_INLINE bool SoftmaxStep(const Plan& plan, Scratch& sc, int64_t r, int64_t h, int64_t i,
                            int64_t j0, int64_t n, int64_t kb) {
  const DF df;
  const DI di;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const AttentionCall& call = *plan.call;
  float* s = sc.s + r * sc.lds;
  const int64_t padded = round_up(n, N);
  sc.alpha[r] = 1;  // unless a new maximum rescales the accumulator below

  // Keys [first, limit) may be visible; with explicit positions each is checked too: its position
  // must lie in [oldest, newest].
  int64_t first = 0, limit = n, oldest = -1, newest = Plan::kUnbounded;
  bool check_positions = false;
  if (plan.masked) {
    const int64_t qp = plan.q_pos[i];
    oldest = plan.oldest_visible(qp);
    newest = plan.newest_visible(qp);
    if (plan.block_min[kb] > newest || plan.block_max[kb] < oldest) {
      limit = 0;
    } else if (plan.explicit_positions) {
      check_positions = plan.block_max[kb] > newest || plan.block_min[kb] < oldest;
    } else {  // k_pos[j] = j
      limit = std::clamp<int64_t>(std::min(newest, j0 + n) - j0 + 1, 0, n);
      first = std::clamp<int64_t>(oldest - j0, 0, n);
      if (first >= limit) limit = 0;
    }
  }
  const float kNegInf = -std::numeric_limits<float>::infinity();
  if (limit == 0) {
    std::fill(s, s + padded, 0.0f);
    return true;
  }

  const float* bias = nullptr;
  const float* bias_lo = nullptr;  // with fused ALiBi and a bias: the low part of their sum
  if (call.bias) {
    const Tensor& b = *call.bias;
    if (b.dtype == DType::f32 && b.strides[2] == 1 && n == padded) {
      bias = b.as<float>() + b.offset(h, i, j0);
    } else {
      ToF32(b, b.offset(h, i, j0), b.strides[2], n, sc.bias_row);
      bias = sc.bias_row;
    }
  }
  if (!plan.slopes.empty()) {
    AlibiRow(plan, sc, h, i, j0, padded, bias);
    if (bias != nullptr) bias_lo = sc.alibi_lo;
    bias = sc.alibi_row;
  }
  if (bias == nullptr && !plan.softcapped && !check_positions && first == 0) {
    return PlainSoftmaxStep(plan, sc, r, limit, padded);
  }

  const auto neg_inf = hn::Set(df, kNegInf);
  const auto scale = hn::Set(df, plan.scale);
  // Positions lie in [0, 2^24] and oldest in [−1, 2^24]: int32 is exact; newest is clamped.
  const auto newest32 = hn::Set(
      di, static_cast<int32_t>(std::clamp<int64_t>(newest, -(int64_t{1} << 30), kMaxPosition + 1)));
  const auto oldest32 = hn::Set(di, static_cast<int32_t>(oldest));
  const auto visible_at = [&](int64_t c) {
    auto visible = hn::FirstN(df, static_cast<size_t>(std::max<int64_t>(limit - c, 0)));
    if (first > c) visible = hn::AndNot(hn::FirstN(df, static_cast<size_t>(first - c)), visible);
    if (check_positions) {
      const auto kp = hn::LoadU(di, plan.k_pos.data() + j0 + c);
      visible = hn::AndNot(hn::RebindMask(df, hn::Gt(kp, newest32)), visible);
      visible = hn::AndNot(hn::RebindMask(df, hn::Lt(kp, oldest32)), visible);
    }
    return visible;
  };
  const auto bias_at = [&](int64_t c) {
    return bias != nullptr ? hn::LoadU(df, bias + c) : hn::Zero(df);  // copied rows are padded
  };

  // Pass 1: the scores' maximum, and whether the row needs the exact path. A softcap turns the
  // products into capped logits in place, so that pass 2 reads logits at scale 1.
  const auto cap = hn::Set(df, plan.softcap), scale_over_cap = hn::Set(df, plan.scale_over_cap);
  auto row_max = neg_inf;
  auto bad = hn::Lt(row_max, row_max);  // all false
  for (int64_t c = 0; c < padded; c += N) {
    const auto visible = visible_at(c);
    const auto raw = hn::Load(df, s + c), b = bias_at(c);
    auto score = hn::MulAdd(raw, scale, b);
    if (plan.softcapped) {
      // Tanh's argument clamped to ±20 (it is ±1 to f32 past 18.7) and NaN made 0: Highway's scalar
      // Expm1 converts it to int, undefined beyond int's range. A non-finite raw is `bad` below.
      const auto x = hn::Mul(raw, scale_over_cap), limit = hn::Set(df, 20.0f);
      const auto tame =
          hn::IfThenZeroElse(hn::IsNaN(x), hn::Min(hn::Max(x, hn::Neg(limit)), limit));
      const auto logit = hn::Mul(cap, hn::Tanh(df, tame));
      hn::Store(logit, df, s + c);
      score = hn::Add(logit, b);
    }
    // −∞ from the bias masks the key, as long as the product itself is finite.
    const auto ok = hn::And(hn::IsFinite(raw), hn::Or(hn::IsFinite(score), hn::Eq(b, neg_inf)));
    bad = hn::Or(bad, hn::AndNot(ok, visible));
    row_max = hn::Max(row_max, hn::IfThenElse(visible, score, neg_inf));
  }
  if (!hn::AllFalse(df, bad)) return false;

  const float old_max = sc.m[r];
  const float new_max = std::max(old_max, hn::GetLane(hn::MaxOfLanes(df, row_max)));
  if (new_max == kNegInf) {  // nothing visible yet
    std::fill(s, s + padded, 0.0f);
    return true;
  }
  // Beyond this, f32 cannot resolve the scores' differences (an ulp of the maximum nears 1).
  if (std::fabs(new_max) > kLargestScore) return false;
  // Pass 2: p = exp(scale·raw + (bias − max)), one rounding for the exponent where the bias and
  // the maximum are close (Sterbenz), so a large common bias costs no accuracy.
  // SoftmaxExp, as the plain step: Exp's subnormal results (e^x for x in (−103.3, −87.3), where
  // ALiBi puts the far keys of its steep heads) cost microcode assists on Intel, here and in p·v:
  // 1.5× the whole call at t=512 with 8 heads, all in the steep heads' part.
  const auto max = hn::Set(df, new_max);
  const auto factor = plan.softcapped ? hn::Set(df, 1.0f) : scale;
  auto sum = hn::Zero(df);
  for (int64_t c = 0; c < padded; c += N) {
    auto exponent_bias = hn::Sub(bias_at(c), max);
    if (bias_lo != nullptr) exponent_bias = hn::Add(exponent_bias, hn::Load(df, bias_lo + c));
    const auto x = hn::MulAdd(hn::Load(df, s + c), factor, exponent_bias);
    const auto p = SoftmaxExp(df, hn::IfThenElse(visible_at(c), x, neg_inf));
    hn::Store(p, df, s + c);
    sum = hn::Add(sum, p);
  }
  UpdateRow(sc, r, new_max, hn::GetLane(hn::SumOfLanes(df, sum)));
  return true;
}

// Folds a sink logit into a row's maximum m and sum l (the accumulator to be scaled by alpha):
// the sink is part of the maximum, so e^(sink − max) never overflows. −∞ is no sink.
HWY_INLINE void FoldSink(float sink, float m, float& l, float& alpha) {
  const DF df;
  const float inf = std::numeric_limits<float>::infinity();
  // e^x for x ≤ 0, 0 below Exp's range (whose scalar form may not see huge arguments).
  const auto exp = [&](float x) {
    return hn::GetLane(hn::Exp(df, hn::Max(hn::Set(df, x), hn::Set(df, -126.0f))));
  };
  if (sink == -inf) return;
  if (sink <= m) {
    l += exp(sink - m);
    return;
  }
  // A new maximum: the keys' share rescales by e^(m − sink) (0 when no key is visible).
  alpha = m == -inf ? 0.0f : exp(m - sink);
  l = l * alpha + 1;
}

// Whether key j counts for query i of head h: not masked, by the mask, the window or a −∞ bias.
HWY_INLINE bool Contributes(const Plan& plan, int64_t h, int64_t i, int64_t j) {
  const AttentionCall& call = *plan.call;
  if (!call.visible(i, j)) return false;
  return !(call.bias && load(*call.bias, call.bias->offset(h, i, j)) ==
                            -std::numeric_limits<double>::infinity());
}

// Writes row (h, i) of out, and of lse if asked, from the row's accumulator acc (ldacc floats),
// maximum m and sum l once every key has been seen, the sink folded in here, once: the row's
// softmax denominator is then e^m·l. l ≥ 1 once any key (or a sink) counts (the maximum's own p is
// 1); no visible key gives zeros, and lse −∞ without a sink.
HWY_INLINE void FinishRow(const Plan& plan, Scratch& sc, const float* acc, float m, float l,
                          int64_t h, int64_t i) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const AttentionCall& call = *plan.call;
  float alpha = 1;
  if (!plan.sinks.empty()) {
    FoldSink(plan.sinks[h], m, l, alpha);
    m = std::max(m, plan.sinks[h]);
  }
  float* o = sc.out_row;
  const auto total = hn::Set(df, l), rescale = hn::Set(df, alpha);
  for (int64_t c = 0; c < sc.ldacc; c += N) {
    auto value = hn::Load(df, acc + c);
    if (alpha != 1) value = hn::Mul(rescale, value);
    hn::Store(l > 0 ? hn::Div(value, total) : hn::Zero(df), df, o + c);
  }
  FromF32(o, plan.dv, call.out, call.out.offset(i, h, 0), call.out.strides[2]);
  if (call.lse) {  // ln(e^m·l) in fp64, rounded once
    const double lse = l > 0 ? static_cast<double>(m) + std::log(static_cast<double>(l))
                             : -std::numeric_limits<double>::infinity();
    call.lse->as<float>()[call.lse->offset(i, h)] = static_cast<float>(lse);
  }
}

// Queries [i0, i1) of query heads [h0, h1), which read one kv head, over key blocks [kb0, kb1).
// Row r is query head h0 + r / (i1 − i0) and query i0 + r % (i1 − i0). Finishes the rows, or with
// `partial` (split-KV) leaves each row's maximum, sum, exceptional flag and accumulator there.
HWY_INLINE void AttendBlock(const Plan& plan, Scratch& sc, int64_t h0, int64_t h1, int64_t i0,
                            int64_t i1, int64_t kb0, int64_t kb1, float* partial) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const AttentionCall& call = *plan.call;
  const Tensor& q = call.q;
  const int64_t kvh = h0 / plan.group, queries = i1 - i0, rows = (h1 - h0) * queries;
  const int64_t d = plan.d, dv = plan.dv;
  const auto head = [&](int64_t r) { return h0 + r / queries; };
  const auto query = [&](int64_t r) { return i0 + r % queries; };
  const float kNegInf = -std::numeric_limits<float>::infinity();

  for (int64_t r = 0; r < rows; ++r) {
    ToF32(q, q.offset(query(r), head(r), 0), q.strides[2], d, sc.q + r * sc.ldq);
    std::fill(sc.acc + r * sc.ldacc, sc.acc + (r + 1) * sc.ldacc, 0.0f);
    sc.m[r] = kNegInf;
    sc.l[r] = 0;
    sc.exceptional[r] = 0;
  }
  // Key blocks that every row's mask, window or chunk hides are skipped.
  int64_t newest = Plan::kUnbounded, oldest = -1;
  if (plan.masked) {
    const auto [lo, hi] = std::minmax_element(&plan.q_pos[i0], &plan.q_pos[i0] + queries);
    newest = plan.newest_visible(*hi);
    oldest = plan.oldest_visible(*lo);
  }

  for (int64_t kb = kb0; kb < kb1; ++kb) {
    if (plan.masked && (plan.block_min[kb] > newest || plan.block_max[kb] < oldest)) continue;
    const int64_t j0 = kb * kKeyBlock, n = std::min(kKeyBlock, plan.tk - j0);

    const float* values;
    int64_t ldv;
    if (plan.pack_keys) {
      const int64_t slot = PackBlock(plan, sc, kvh, kb0, kb);
      Product(sc.q, sc.ldq, sc.keys + slot * d * kKeyBlock, kKeyBlock, sc.s, sc.lds, rows,
              round_up(n, N), d);
      values = sc.values + slot * kKeyBlock * sc.ldacc;
      ldv = sc.ldacc;
    } else {
      DotScores(plan, sc, kvh, j0, n, rows);
      values = ValueRows(plan, sc, kvh, j0, n, ldv);
    }

    for (int64_t r = 0; r < rows; ++r) {
      if (!sc.exceptional[r] && !SoftmaxStep(plan, sc, r, head(r), query(r), j0, n, kb)) {
        sc.exceptional[r] = 1;
      }
      if (sc.exceptional[r]) {
        std::fill(sc.s + r * sc.lds, sc.s + r * sc.lds + round_up(n, N), 0.0f);
      }
    }

    // This block's p·v.
    Product(sc.s, sc.lds, values, ldv, sc.t, sc.ldacc, rows, sc.ldacc, n);
    // A value that is NaN or ∞ (an unused KV-cache slot, say) turns every row's product non-finite
    // (0·NaN is NaN): redo the block with those values zeroed. A row that sees such a key, or
    // whose product overflows, takes the exact path.
    bool finite = true;
    for (int64_t r = 0; r < rows; ++r)
      finite &= sc.exceptional[r] || AllFinite(sc.t + r * sc.ldacc, dv);
    if (!finite) {
      sc.bad_values.clear();
      for (int64_t j = 0; j < n; ++j) {
        float* row = sc.v + j * sc.ldacc;
        std::memcpy(row, values + j * ldv, static_cast<size_t>(sc.ldacc) * sizeof(float));
        if (!AllFinite(row, dv)) {
          sc.bad_values.push_back(j);
          std::fill(row, row + dv, 0.0f);
        }
      }
      Product(sc.s, sc.lds, sc.v, sc.ldacc, sc.t, sc.ldacc, rows, sc.ldacc, n);
      for (int64_t r = 0; r < rows; ++r) {
        if (sc.exceptional[r]) continue;
        bool sees_bad_value = false;
        for (int64_t j : sc.bad_values)
          sees_bad_value |= Contributes(plan, head(r), query(r), j0 + j);
        if (sees_bad_value || !AllFinite(sc.t + r * sc.ldacc, dv)) sc.exceptional[r] = 1;
      }
    }
    // acc = alpha·acc + p·v.
    for (int64_t r = 0; r < rows; ++r) {
      if (sc.exceptional[r]) continue;
      float* acc = sc.acc + r * sc.ldacc;
      const float* t = sc.t + r * sc.ldacc;
      const auto alpha = hn::Set(df, sc.alpha[r]);
      for (int64_t c = 0; c < sc.ldacc; c += N) {
        hn::Store(hn::MulAdd(alpha, hn::Load(df, acc + c), hn::Load(df, t + c)), df, acc + c);
      }
    }
  }

  for (int64_t r = 0; r < rows; ++r) {
    if (partial != nullptr) {
      float* row = partial + r * (3 + sc.ldacc);
      row[0] = sc.m[r];
      row[1] = sc.l[r];
      row[2] = sc.exceptional[r];
      std::memcpy(row + 3, sc.acc + r * sc.ldacc, static_cast<size_t>(sc.ldacc) * sizeof(float));
    } else if (sc.exceptional[r]) {
      exact_row(call, head(r), query(r));
    } else {
      FinishRow(plan, sc, sc.acc + r * sc.ldacc, sc.m[r], sc.l[r], head(r), query(r));
    }
  }
}

// Split-KV's second pass for row `index` % split_rows of work item `index` / split_rows: its splits
// merged in their order, in fp64 (the maximum M of their maxima, sum Σ e^(m_s − M)·l_s,
// accumulator Σ e^(m_s − M)·acc_s), then finished as a whole walk finishes it; a row exceptional
// in any split takes the exact path.
HWY_INLINE void MergeSplits(const Plan& plan, Scratch& sc, int64_t index, const float* partials) {
  int64_t h0, h1, i0, i1;
  const int64_t item = index / plan.split_rows, r = index % plan.split_rows;
  plan.item(item, h0, h1, i0, i1);
  const int64_t queries = i1 - i0, stride = 3 + sc.ldacc;
  if (r >= (h1 - h0) * queries) return;  // the item has fewer rows
  const int64_t h = h0 + r / queries, i = i0 + r % queries;
  const float* first = partials + item * plan.seen_splits * plan.partial_floats + r * stride;
  const auto split_row = [&](int64_t s) { return first + s * plan.partial_floats; };
  bool exceptional = false;
  double top = -std::numeric_limits<double>::infinity();
  for (int64_t s = 0; s < plan.seen_splits; ++s) {
    exceptional |= split_row(s)[2] != 0;
    if (split_row(s)[1] > 0) top = std::max<double>(top, split_row(s)[0]);
  }
  if (exceptional) {
    exact_row(*plan.call, h, i);
    return;
  }
  sc.merged.assign(static_cast<size_t>(sc.ldacc), 0.0);
  double total = 0;
  for (int64_t s = 0; s < plan.seen_splits; ++s) {
    const float* row = split_row(s);
    if (!(row[1] > 0)) continue;  // no key of this split seen
    const double w = std::exp(row[0] - top);
    total += w * row[1];
    for (int64_t c = 0; c < sc.ldacc; ++c) sc.merged[c] += w * row[3 + c];
  }
  for (int64_t c = 0; c < sc.ldacc; ++c) sc.acc[c] = static_cast<float>(sc.merged[c]);
  FinishRow(plan, sc, sc.acc, static_cast<float>(top), static_cast<float>(total), h, i);
}

// Work [begin, end) of one pass: work items (see Plan::item); for split-KV's first pass, (split,
// item) pairs, split-major, each leaving its partial in `partials`; for its second, (item, row)
// pairs whose splits it merges.
void Attend(const Plan& plan, Pass pass, int64_t begin, int64_t end, float* partials) {
  Scratch& scratch = Scratch::for_this_thread(plan);
  const int64_t items = plan.items();
  for (int64_t index = begin; index < end; ++index) {
    if (pass == Pass::merge) {
      MergeSplits(plan, scratch, index, partials);
      continue;
    }
    // Split-KV's first pass runs split-major: consecutive work items read the same keys' rows for
    // each head in turn, which lie side by side in a [tk, heads, d] cache, so a part streams
    // through whole rows instead of a head's strided slices of them. Each (item, split) keeps its
    // own partial, whichever part computes it.
    const int64_t item = pass == Pass::split ? index % items : index;
    int64_t h0, h1, i0, i1;
    plan.item(item, h0, h1, i0, i1);
    if (pass == Pass::whole) {
      AttendBlock(plan, scratch, h0, h1, i0, i1, 0, plan.key_blocks, nullptr);
    } else {
      const int64_t local = index / items, split = plan.first_split + local;
      const int64_t per_split = kSplitKeys / kKeyBlock;
      AttendBlock(plan, scratch, h0, h1, i0, i1, split * per_split,
                  std::min(plan.key_blocks, (split + 1) * per_split),
                  partials + (item * plan.seen_splits + local) * plan.partial_floats);
    }
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using AttendFn = decltype(HWY_STATIC_DISPATCH(Attend));

namespace {

void run_attention(const AttentionCall& call, AttendFn* attend) {
  using attention_detail::Pass;
  call.validate();
  const attention_detail::Plan plan(call);
  const int64_t items = plan.items();
  if (items == 0) return;
  // Per score: the two products at roughly 40 flop/ns, plus the softmax.
  const double per_score = 0.05 * static_cast<double>(plan.d + plan.dv) + 0.5;
  const int64_t rows = plan.heads_per_item * std::min(plan.tq, plan.queries_per_item);
  if (!plan.split()) {
    const double per_item = per_score * static_cast<double>(rows * plan.tk);
    const int parts = plan_parts(call.threads, items, per_item);
    parallel_for(items, parts,
                 [&](Range r) { attend(plan, Pass::whole, r.begin, r.end, nullptr); });
    return;
  }
  // The partials live in the calling thread's buffer, which only grows: fresh pages would fault in
  // on every call (about 12 µs per 4 KiB here).
  float* partials = reusable<float>(items * plan.seen_splits * plan.partial_floats);
  const int64_t work = items * plan.seen_splits;
  const double per_split = per_score * static_cast<double>(rows * attention_detail::kSplitKeys);
  const int parts = plan_parts(call.threads, work, per_split);
  parallel_for(work, parts, [&](Range r) { attend(plan, Pass::split, r.begin, r.end, partials); });
  // The merge, over (item, row) pairs, on as many parts.
  const int64_t merges = items * plan.split_rows;
  parallel_for(merges, static_cast<int>(std::min<int64_t>(parts, merges)),
               [&](Range r) { attend(plan, Pass::merge, r.begin, r.end, partials); });
}

}  // namespace

// softmax(scale·q·kᵀ + bias + mask)·v, flash-style: f32 products in register tiles and online
// softmax, by Highway; rows the fast path does not cover (NaN, ±∞, overflow) are computed in fp64
// by exact_row. Bound 32 in ulp(vmax)·(1 + |scale|·‖q_i‖·kmax), a statistical bound (the error
// analysis is in attention.cc).
std::vector<Impl<AttentionCall>> attention() {
  static const TargetTable<AttendFn> table = POSENC_TARGET_TABLE(Attend);
  const uint64_t variants =
      variant::f32 | variant::bf16 | variant::f16 | variant::strided | variant::attention_causal |
      variant::attention_bias | variant::attention_gqa | variant::attention_positions |
      variant::attention_window | variant::attention_softcap | variant::attention_lse |
      variant::attention_chunked | variant::attention_sinks | variant::attention_alibi;
  return target_impls<AttentionCall>("attention", variants, /*bound=*/32, /*threaded=*/true, table,
                                     run_attention);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
