// Broken kernels for the self-test (see selftest.h). Each computes in fp64 and rounds once, like
// the reference, so that the bug is the only thing wrong with it.
#include "properties/selftest.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "posenc/error.h"
#include "properties/harness.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

// ---- Bugs any family can have, as wrappers around its reference. ----

// A vector store of the last block runs one element past the end of the first output.
template <class Call>
Impl<Call> stray_write(const std::string& family) {
  return {family + "/broken:stray_write", kAllVariants, 1, [](const Call& call) {
            reference_impl<Call>().run(call);
            const Tensor out = outputs(call).front();
            if (out.numel() == 0) return;
            int64_t last = 0;
            for (int d = 0; d < out.rank; ++d) last += (out.shape[d] - 1) * out.strides[d];
            store(out, last + 1, 0.0);
          }};
}

// Indexes every tensor as if it were row-major contiguous, whatever its strides.
template <class Call>
Impl<Call> ignores_strides(const std::string& family) {
  return {family + "/broken:ignores_strides", kAllVariants, 1, [](const Call& call) {
            Call flat = call;
            for (Tensor* t : views(flat)) {
              if (t == nullptr) continue;
              int64_t stride = 1;
              for (int d = t->rank - 1; d >= 0; --d) {
                t->strides[d] = stride;
                stride *= t->shape[d];
              }
            }
            reference_impl<Call>().run(flat);
          }};
}

// Clears its first output element (an accumulator, say) before validating the call.
template <class Call>
Impl<Call> writes_before_validating(const std::string& family) {
  return {family + "/broken:writes_before_validating", kAllVariants, 1, [](const Call& call) {
            for (const Tensor& out : outputs(call))
              if (out.data != nullptr && is_float(out.dtype)) std::memset(out.data, 0, 4);
            reference_impl<Call>().run(call);
          }};
}

template <class Call>
void add_generic(std::vector<Broken<Call>>& list, const std::string& family) {
  list.push_back({stray_write<Call>(family), "writes one element past the end of its output",
                  family + ".guard_bytes"});
  list.push_back({ignores_strides<Call>(family), "ignores strides: assumes contiguous tensors",
                  family + ".layouts"});
  list.push_back({writes_before_validating<Call>(family),
                  "writes its output before validating the call", family + ".bad_input"});
}

// ---- sinusoidal ----

enum class SinusoidalBug {
  off_by_one,          // PE[p + 1]
  sin_sign_flipped,    // −sin
  omega_i_over_d,      // ω_i = base^(−i/d)
  no_range_reduction,  // sin/cos polynomials valid on [−π, π] applied to any angle
  f32_angles,          // θ = float(p)·float(ω)
  chunked_f32_angles,  // per thread chunk, θ advances by a running f32 sum
};

double poly_sin(double x) {  // Taylor to x⁹: fine near 0, unbounded far from it
  const double x2 = x * x;
  return x * (1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42 * (1 - x2 / 72))));
}
double poly_cos(double x) {
  const double x2 = x * x;
  return 1 - x2 / 2 * (1 - x2 / 12 * (1 - x2 / 30 * (1 - x2 / 56)));
}

void sinusoidal_with(SinusoidalBug bug, const SinusoidalCall& call) {
  call.validate();
  const Tensor& out = call.out;
  const int64_t tokens = out.shape[0], d = out.shape[1];
  const int64_t chunk =
      (tokens + resolve_threads(call.threads) - 1) / std::max(resolve_threads(call.threads), 1);
  for (int64_t i = 0; i < d / 2; ++i) {
    const double exponent = (bug == SinusoidalBug::omega_i_over_d ? 1.0 : 2.0) * i / d;
    const double omega = std::pow(call.base, -exponent);
    float running = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t p = call.position(t) + (bug == SinusoidalBug::off_by_one ? 1 : 0);
      double angle = static_cast<double>(p) * omega;
      if (bug == SinusoidalBug::f32_angles)
        angle = static_cast<float>(p) * static_cast<float>(omega);
      if (bug == SinusoidalBug::chunked_f32_angles) {
        // Each chunk starts exactly, then steps by the position difference in f32.
        running = t % chunk == 0 ? static_cast<float>(angle)
                                 : running + static_cast<float>(omega) *
                                                 static_cast<float>(p - call.position(t - 1));
        angle = running;
      }
      double s = std::sin(angle), c = std::cos(angle);
      if (bug == SinusoidalBug::no_range_reduction) s = poly_sin(angle), c = poly_cos(angle);
      if (bug == SinusoidalBug::sin_sign_flipped) s = -s;
      const double xs = call.x ? load(*call.x, call.x->offset(t, 2 * i)) : 0.0;
      const double xc = call.x ? load(*call.x, call.x->offset(t, 2 * i + 1)) : 0.0;
      store(out, out.offset(t, 2 * i), xs + s);
      store(out, out.offset(t, 2 * i + 1), xc + c);
    }
  }
}

// ---- absolute ----

enum class AbsoluteBug {
  off_by_one,         // table[p + 1] (clamped to the last row)
  ignores_positions,  // row t of the packed batch instead of positions[t]
  skips_tail,         // columns in blocks of 8; the last partial block is never written
  clamps_positions,   // positions past the table are clamped instead of rejected
};

void absolute_with(AbsoluteBug bug, const AbsoluteCall& call) {
  try {
    call.validate();
  } catch (const Error& e) {
    if (bug != AbsoluteBug::clamps_positions || e.argument().rfind("positions[", 0) != 0) throw;
  }
  const int64_t tokens = call.x.shape[0], dim = call.x.shape[1], rows = call.table.shape[0];
  const int64_t columns = bug == AbsoluteBug::skips_tail ? dim / 8 * 8 : dim;
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t row = load_index(call.positions, call.positions.offset(t));
    if (bug == AbsoluteBug::off_by_one) row = std::min(row + 1, rows - 1);
    if (bug == AbsoluteBug::ignores_positions) row = t % rows;
    row = std::clamp<int64_t>(row, 0, rows - 1);
    for (int64_t c = 0; c < columns; ++c)
      store(call.out, call.out.offset(t, c),
            load(call.x, call.x.offset(t, c)) + load(call.table, call.table.offset(row, c)));
  }
}

// ---- attention ----

enum class AttentionBug {
  ignores_causal_mask,
  ignores_bias,
  skips_key_tail,        // keys in blocks of 8; the last partial block is dropped
  unstable_softmax,      // exp(score) in f32 without subtracting the row maximum
  gqa_wrong_head,        // query head h reads kv head h % hkv instead of h / (hq / hkv)
  split_keys_by_thread,  // each thread's key range is reduced in f32, then combined in f32
};

void attention_with(AttentionBug bug, const AttentionCall& call) {
  call.validate();
  const Tensor &q = call.q, &k = call.k, &v = call.v, &out = call.out;
  const int64_t tq = q.shape[0], hq = q.shape[1], d = q.shape[2];
  const int64_t tk = k.shape[0], hkv = k.shape[1], group = hq / hkv, dv = v.shape[2];
  const int64_t keys = bug == AttentionBug::skips_key_tail ? tk / 8 * 8 : tk;
  const int threads = resolve_threads(call.threads);
  const int64_t chunk = std::max<int64_t>((keys + threads - 1) / threads, 1);
  std::vector<double> score(tk), acc(dv);
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t kvh = bug == AttentionBug::gqa_wrong_head ? h % hkv : h / group;
    for (int64_t i = 0; i < tq; ++i) {
      double top = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += load(q, q.offset(i, h, c)) * load(k, k.offset(j, kvh, c));
        score[j] = call.resolved_scale() * dot;
        if (call.bias && bug != AttentionBug::ignores_bias)
          score[j] += load(*call.bias, call.bias->offset(h, i, j));
        if (call.mask == Mask::causal && bug != AttentionBug::ignores_causal_mask &&
            call.k_position(j) > call.q_position(i))
          score[j] = -INFINITY;
        top = std::fmax(top, score[j]);
      }
      if (bug == AttentionBug::unstable_softmax) top = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      double total = 0;
      if (bug == AttentionBug::split_keys_by_thread) {
        // Partial sums per thread's key range, rounded to f32, combined in f32.
        float ftotal = 0;
        std::vector<float> facc(dv, 0.0f);
        for (int64_t start = 0; start < keys; start += chunk) {
          float part = 0;
          std::vector<float> pacc(dv, 0.0f);
          for (int64_t j = start; j < std::min(keys, start + chunk); ++j) {
            if (score[j] == -INFINITY) continue;
            const float w = static_cast<float>(std::exp(score[j] - top));
            part += w;
            for (int64_t c = 0; c < dv; ++c)
              pacc[c] += w * static_cast<float>(load(v, v.offset(j, kvh, c)));
          }
          ftotal += part;
          for (int64_t c = 0; c < dv; ++c) facc[c] += pacc[c];
        }
        total = ftotal;
        for (int64_t c = 0; c < dv; ++c) acc[c] = facc[c];
      } else if (top != -INFINITY) {
        for (int64_t j = 0; j < keys; ++j) {
          if (score[j] == -INFINITY) continue;
          const double w = bug == AttentionBug::unstable_softmax
                               ? static_cast<double>(std::exp(static_cast<float>(score[j])))
                               : std::exp(score[j] - top);
          total += w;
          for (int64_t c = 0; c < dv; ++c) acc[c] += w * load(v, v.offset(j, kvh, c));
        }
      }
      for (int64_t c = 0; c < dv; ++c)
        store(out, out.offset(i, h, c), total > 0 || std::isnan(total) ? acc[c] / total : 0.0);
    }
  }
}

}  // namespace

template <>
std::vector<Broken<SinusoidalCall>> broken_implementations<SinusoidalCall>() {
  using B = SinusoidalBug;
  auto make = [](const char* name, B bug, bool threaded = false) {
    Impl<SinusoidalCall> impl{std::string("sinusoidal/broken:") + name, kAllVariants, 1,
                              [bug](const SinusoidalCall& call) { sinusoidal_with(bug, call); }};
    impl.threaded = threaded;
    return impl;
  };
  std::vector<Broken<SinusoidalCall>> list = {
      {make("off_by_one", B::off_by_one), "reads position p + 1", "sinusoidal.pe0"},
      {make("sin_sign_flipped", B::sin_sign_flipped), "sin's sign flipped", "sinusoidal.rotation"},
      {make("omega_i_over_d", B::omega_i_over_d), "ω exponent i/d instead of 2i/d",
       "sinusoidal.offset_dot"},
      {make("no_range_reduction", B::no_range_reduction),
       "sin/cos polynomials without range reduction", "sinusoidal.range"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32: wrong at long positions",
       "sinusoidal.differential"},
      {make("chunked_f32_angles", B::chunked_f32_angles, true),
       "each thread's chunk advances its angle by a running f32 sum", "sinusoidal.threads"},
  };
  add_generic(list, "sinusoidal");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<SinusoidalCall>() {
  return {};
}

template <>
std::vector<Broken<AbsoluteCall>> broken_implementations<AbsoluteCall>() {
  using B = AbsoluteBug;
  auto make = [](const char* name, B bug) {
    return Impl<AbsoluteCall>{std::string("absolute/broken:") + name, kAllVariants, 0,
                              [bug](const AbsoluteCall& call) { absolute_with(bug, call); }};
  };
  std::vector<Broken<AbsoluteCall>> list = {
      {make("off_by_one", B::off_by_one), "reads table row p + 1",
       "absolute.same_token_two_positions"},
      {make("ignores_positions", B::ignores_positions),
       "uses the token's index in the packed batch as its position", "absolute.batch_broadcast"},
      {make("skips_tail", B::skips_tail), "SIMD-style loop that never writes the last dim % 8",
       "absolute.differential"},
      {make("clamps_positions", B::clamps_positions),
       "clamps a position past the table instead of rejecting it", "absolute.bad_input"},
  };
  add_generic(list, "absolute");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<AbsoluteCall>() {
  // An elementwise add has no reduction whose order a thread count could change.
  return {{"absolute.threads",
           "sinusoidal/broken:chunked_f32_angles, attention/broken:split_keys_by_thread"}};
}

template <>
std::vector<Broken<AttentionCall>> broken_implementations<AttentionCall>() {
  using B = AttentionBug;
  auto make = [](const char* name, B bug, bool threaded = false) {
    Impl<AttentionCall> impl{std::string("attention/broken:") + name, kAllVariants, 2,
                             [bug](const AttentionCall& call) { attention_with(bug, call); }};
    impl.threaded = threaded;
    return impl;
  };
  std::vector<Broken<AttentionCall>> list = {
      {make("ignores_causal_mask", B::ignores_causal_mask), "ignores the causal mask",
       "attention.causal_not_equivariant"},
      {make("ignores_bias", B::ignores_bias), "ignores the additive (positional) bias",
       "attention.shuffle"},
      {make("skips_key_tail", B::skips_key_tail),
       "SIMD-style key loop that drops the last tk % 8 keys", "attention.permutation_equivariance"},
      {make("unstable_softmax", B::unstable_softmax),
       "softmax in f32 without subtracting the row maximum", "attention.differential"},
      {make("gqa_wrong_head", B::gqa_wrong_head), "query head h reads kv head h % hkv",
       "attention.eigen_oracle"},
      {make("split_keys_by_thread", B::split_keys_by_thread, true),
       "reduces each thread's keys in f32 and combines the partial sums in f32",
       "attention.threads"},
  };
  add_generic(list, "attention");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<AttentionCall>() {
  return {};
}

}  // namespace posenc::harness
