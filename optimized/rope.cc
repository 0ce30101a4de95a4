// rope: rotate the first rotary_dim dims of every q (and k) head of token t by θ_i = p_t·ω_i.
//
// Per token, the coefficients c_i = f·cos θ_i and s_i = ±f·sin θ_i are rounded once to f32, from
// exact angles and double sin/cos (vectorized over i, shared by all heads) or from the cache row.
// Each output is then one FMA over one rounded product, e.g. a' = fma(a, c, −round(b·s)):
// before its final rounding it is within 1.5 ulp_f32(f·‖(a, b)‖) of the exact value (the
// rounding of c and s, with ‖(a, b)‖·‖(δc, δs)‖ below one unit, plus half an ulp of the product),
// so after rounding it is within 2 units of the reference's correctly rounded result. Tokens are
// split across threads; every element is computed the same way in every part, so the output is
// bitwise identical for any thread count.
#ifndef POSENC_OPTIMIZED_ROPE_SHARED
#define POSENC_OPTIMIZED_ROPE_SHARED
#include <hwy/aligned_allocator.h>

#include <array>
#include <cstring>

#include "optimized/angles.h"
#include "optimized/optimized.h"
#include "optimized/thread_pool.h"

namespace posenc::optimized {

// One of q, k: input and output heads of every token, strides in elements.
struct RopeHeads {
  const float* in = nullptr;
  float* out = nullptr;
  int64_t heads = 0;  // 0 when absent
  std::array<int64_t, 3> in_strides{}, out_strides{};
  bool in_place = false;
};

struct RopePlan {
  const RopeCall* call;
  int64_t half, rotary_dim, head_dim;
  bool interleaved;
  float sin_sign;        // −1 for the inverse rotation
  const Angles* angles;  // on the fly; null when cached
  double factor;         // attention factor, on the fly
  RopeHeads q, k;
};

inline int64_t round_up(int64_t n, int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

// Scratch floats for one part: on the stack for the usual head sizes, on the heap beyond.
class Scratch {
 public:
  explicit Scratch(int64_t floats) {
    if (floats > kSmall) {
      big_ = hwy::AllocateAligned<float>(floats);
      data_ = big_.get();
    }
    std::memset(data_, 0, sizeof(float) * floats);
  }
  float* data() { return data_; }

 private:
  static constexpr int64_t kSmall = 4096;
  alignas(64) float small_[kSmall];
  hwy::AlignedFreeUniquePtr<float[]> big_;
  float* data_ = small_;
};

}  // namespace posenc::optimized
#endif  // POSENC_OPTIMIZED_ROPE_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/rope.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// c[i], s[i] for i < half of the token at `position`, f32, s already signed for the inverse.
HWY_INLINE void TokenCoefficients(const RopePlan& plan, int64_t position, float* c, float* s) {
  const RopeCall& call = *plan.call;
  if (call.cos) {
    const Tensor &cos = *call.cos, &sin = *call.sin;
    const float* cr = cos.as<float>() + cos.offset(position);
    const float* sr = sin.as<float>() + sin.offset(position);
    for (int64_t i = 0; i < plan.half; ++i) {
      c[i] = cr[i * cos.strides[1]];
      s[i] = plan.sin_sign * sr[i * sin.strides[1]];  // exact: ±1
    }
    return;
  }
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const auto fc = hn::Set(dd, plan.factor), fs = hn::Set(dd, plan.sin_sign * plan.factor);
  for (int64_t i = 0; i < plan.half; i += N) {
    hn::Vec<decltype(dd)> sin, cos;
    AngleSinCos(dd, *plan.angles, position, i, sin, cos);
    hn::Store(hn::DemoteTo(df, hn::Mul(cos, fc)), df, c + i);
    hn::Store(hn::DemoteTo(df, hn::Mul(sin, fs)), df, s + i);
  }
}

// One pair vector: a' = a·c − b·s, b' = b·c + a·s, each one FMA over one rounded product.
template <class D>
HWY_INLINE void RotatePair(D d, const float* a_in, const float* b_in, float* a_out, float* b_out,
                           const float* c, const float* s) {
  const auto a = hn::LoadU(d, a_in), b = hn::LoadU(d, b_in);
  const auto cv = hn::LoadU(d, c), sv = hn::LoadU(d, s);
  hn::StoreU(FusedMulAdd(d, a, cv, hn::Neg(hn::Mul(b, sv))), d, a_out);
  hn::StoreU(FusedMulAdd(d, b, cv, hn::Mul(a, sv)), d, b_out);
}

// Half-split pairs (x[i], x[i + half]) of one contiguous row. The tail goes through a whole vector
// on the stack, so every element is computed by the same lane arithmetic.
template <class D>
HWY_INLINE void RotateHalfSplit(D d, const float* in, float* out, const float* c, const float* s,
                                int64_t half) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= half; i += N)
    RotatePair(d, in + i, in + half + i, out + i, out + half + i, c + i, s + i);
  if (i == half) return;
  HWY_ALIGN float a[hn::MaxLanes(d)] = {}, b[hn::MaxLanes(d)] = {};
  const size_t rest = sizeof(float) * static_cast<size_t>(half - i);
  std::memcpy(a, in + i, rest);
  std::memcpy(b, in + half + i, rest);
  RotatePair(d, a, b, a, b, c + i, s + i);
  std::memcpy(out + i, a, rest);
  std::memcpy(out + half + i, b, rest);
}

// Interleaved pairs (x[2i], x[2i + 1]) of one contiguous row, with c2[j] = c[j/2] and
// s2[j] = ∓s[j/2] (− on even j): x' = fma(x, c2, round(swap(x)·s2)), the same arithmetic as
// RotatePair.
template <class D>
HWY_INLINE void RotateInterleaved(D d, const float* in, float* out, const float* c2,
                                  const float* s2, int64_t rotary_dim) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  if constexpr (hn::MaxLanes(D()) >= 2) {
    const auto rotate = [&](const float* x_in, float* x_out, int64_t j) {
      const auto x = hn::LoadU(d, x_in);
      const auto swapped = hn::Reverse2(d, x);
      hn::StoreU(FusedMulAdd(d, x, hn::LoadU(d, c2 + j), hn::Mul(swapped, hn::LoadU(d, s2 + j))), d,
                 x_out);
    };
    int64_t j = 0;
    for (; j + N <= rotary_dim; j += N) rotate(in + j, out + j, j);
    if (j == rotary_dim) return;
    HWY_ALIGN float x[hn::MaxLanes(d)] = {};
    const size_t rest = sizeof(float) * static_cast<size_t>(rotary_dim - j);
    std::memcpy(x, in + j, rest);
    rotate(x, x, j);
    std::memcpy(out + j, x, rest);
  } else {  // one lane (HWY_SCALAR): swap by hand
    for (int64_t j = 0; j < rotary_dim; j += 2) {
      const auto a = hn::Set(d, in[j]), b = hn::Set(d, in[j + 1]);
      out[j] = hn::GetLane(FusedMulAdd(d, a, hn::Set(d, c2[j]), hn::Mul(b, hn::Set(d, s2[j]))));
      out[j + 1] =
          hn::GetLane(FusedMulAdd(d, b, hn::Set(d, c2[j + 1]), hn::Mul(a, hn::Set(d, s2[j + 1]))));
    }
  }
  (void)N;
}

void RopeTokens(const RopePlan& plan, int64_t begin, int64_t end) {
  const hn::ScalableTag<float> d;
  const int64_t padded = round_up(plan.half, kAnglePad), rot = plan.rotary_dim;
  Scratch scratch(6 * padded + round_up(rot, kAnglePad));
  float* c = scratch.data();     // [padded]
  float* s = c + padded;         // [padded]
  float* c2 = s + padded;        // [2·padded], interleaved layout
  float* s2 = c2 + 2 * padded;   // [2·padded]
  float* row = s2 + 2 * padded;  // a strided row's rotary part
  const auto rotate = [&](const float* in, float* out) {
    if (plan.interleaved) {
      RotateInterleaved(d, in, out, c2, s2, rot);
    } else {
      RotateHalfSplit(d, in, out, c, s, plan.half);
    }
  };
  const auto rotate_heads = [&](const RopeHeads& x, int64_t t) {
    for (int64_t h = 0; h < x.heads; ++h) {
      const float* in = x.in + t * x.in_strides[0] + h * x.in_strides[1];
      float* out = x.out + t * x.out_strides[0] + h * x.out_strides[1];
      const int64_t is = x.in_strides[2], os = x.out_strides[2];
      if (is == 1 && os == 1) {
        rotate(in, out);
        if (!x.in_place) std::memcpy(out + rot, in + rot, sizeof(float) * (plan.head_dim - rot));
        continue;
      }
      for (int64_t j = 0; j < rot; ++j) row[j] = in[j * is];
      rotate(row, row);
      for (int64_t j = 0; j < rot; ++j) out[j * os] = row[j];
      if (!x.in_place) {  // bit-exact pass-through
        for (int64_t j = rot; j < plan.head_dim; ++j) std::memcpy(out + j * os, in + j * is, 4);
      }
    }
  };
  const hn::ScalableTag<float> df;
  const int64_t Nf = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t t = begin; t < end; ++t) {
    const Tensor& positions = plan.call->positions;
    TokenCoefficients(plan, load_index(positions, positions.offset(t)), c, s);
    if (plan.interleaved) {
      for (int64_t i = 0; i < plan.half; i += Nf) {
        const auto cv = hn::Load(df, c + i), sv = hn::Load(df, s + i);
        hn::StoreInterleaved2(cv, cv, df, c2 + 2 * i);
        hn::StoreInterleaved2(hn::Neg(sv), sv, df, s2 + 2 * i);
      }
    }
    rotate_heads(plan.q, t);
    rotate_heads(plan.k, t);
  }
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "optimized/targets.h"

namespace posenc::optimized {

using RopeTokensFn = decltype(HWY_STATIC_DISPATCH(RopeTokens));

namespace {

RopeHeads heads_of(const Tensor& in, const Tensor& out) {
  return {.in = in.as<const float>(),
          .out = out.as<float>(),
          .heads = in.shape[1],
          .in_strides = {in.strides[0], in.strides[1], in.strides[2]},
          .out_strides = {out.strides[0], out.strides[1], out.strides[2]},
          .in_place = same_view(in, out)};
}

void run_rope(const RopeCall& call, RopeTokensFn* tokens_fn) {
  call.validate();
  const int64_t tokens = call.q.shape[0], head_dim = call.q.shape[2];
  RopePlan plan{.call = &call,
                .half = call.rotary_dim / 2,
                .rotary_dim = call.rotary_dim,
                .head_dim = head_dim,
                .interleaved = call.layout == RopeLayout::interleaved,
                .sin_sign = call.inverse ? -1.0f : 1.0f,
                .angles = nullptr,
                .factor = 1,
                .q = heads_of(call.q, call.q_out),
                .k = call.k ? heads_of(*call.k, *call.k_out) : RopeHeads{}};
  // About 0.1 ns per element rotated or copied, 1.5 ns per sin/cos pair (0.3 from a cache).
  const double per_token = 0.1 * static_cast<double>((plan.q.heads + plan.k.heads) * head_dim) +
                           (call.cached() ? 0.3 : 1.5) * static_cast<double>(plan.half);
  const int parts = plan_parts(call.threads, tokens, per_token);
  if (!call.cached()) {
    plan.angles = &rope_angles(call.rotary_dim, call.base, call.scaling);
    plan.factor = plan.angles->attention_factor;
  }
  parallel_for(tokens, parts, [&](Range r) { tokens_fn(plan, r.begin, r.end); });
}

}  // namespace

std::vector<Impl<RopeCall>> rope() {
  static const TargetTable<RopeTokensFn> table = POSENC_TARGET_TABLE(RopeTokens);
  constexpr uint64_t kVariants = variant::f32 | variant::strided | variant::in_place |
                                 variant::rope_half_split | variant::rope_interleaved |
                                 variant::rope_partial | variant::rope_inverse |
                                 variant::rope_cached | variant::rope_key | variant::all_scalings;
  return target_impls<RopeCall>("rope", kVariants, /*bound=*/2, /*threaded=*/true, table, run_rope);
}

}  // namespace posenc::optimized
#endif  // HWY_ONCE
