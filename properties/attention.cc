// attention: outputs, tolerance model and problems.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "properties/harness.h"

namespace posenc::harness {

std::vector<Tensor> outputs(const AttentionCall& call) { return {call.out}; }

Comparison compare(const AttentionCall& expected, const AttentionCall& got, double bound) {
  // Unit: ulp(vmax) · (1 + |scale|·‖q_i‖·kmax), see attention.h.
  const Tensor &q = expected.q, &k = expected.k, &v = expected.v;
  const int64_t hkv = k.shape[1], group = q.shape[1] / hkv, dv = v.shape[2];
  std::vector<double> vmax(hkv * dv, 0.0), kmax(hkv, 0.0);
  for (int64_t j = 0; j < k.shape[0]; ++j)
    for (int64_t h = 0; h < hkv; ++h) {
      double norm = 0;
      for (int64_t c = 0; c < k.shape[2]; ++c) norm += std::pow(load(k, k.offset(j, h, c)), 2);
      kmax[h] = std::fmax(kmax[h], std::sqrt(norm));
      for (int64_t c = 0; c < dv; ++c)
        vmax[h * dv + c] = std::fmax(vmax[h * dv + c], std::fabs(load(v, v.offset(j, h, c))));
    }
  const double scale = std::fabs(expected.resolved_scale());
  return harness::compare("out", expected.out, got.out, bound, [&](const int64_t* ix) {
    const int64_t i = ix[0], h = ix[1], c = ix[2];
    double qnorm = 0;
    for (int64_t e = 0; e < q.shape[2]; ++e) qnorm += std::pow(load(q, q.offset(i, h, e)), 2);
    return ulp_f32(vmax[(h / group) * dv + c]) * (1 + scale * std::sqrt(qnorm) * kmax[h / group]);
  });
}

namespace {

struct AttentionShape {
  int64_t tq, tk, hq, hkv, d, dv;
  Mask mask;
  bool bias;
  Layout layout;
};

Problem<AttentionCall> attention_problem(AttentionShape s, uint64_t seed) {
  std::string label = fmt::format(
      "tq={} tk={} hq={} hkv={} d={} dv={} mask={} bias={} {}", s.tq, s.tk, s.hq, s.hkv, s.d, s.dv,
      s.mask == Mask::causal ? "causal" : "none", s.bias, layout_name(s.layout));
  return {label, [s, seed](Arena& arena) {
            Values values(seed);
            AttentionCall call;
            call.q = arena.alloc(DType::f32, {s.tq, s.hq, s.d}, s.layout);
            call.k = arena.alloc(DType::f32, {s.tk, s.hkv, s.d}, s.layout);
            call.v = arena.alloc(DType::f32, {s.tk, s.hkv, s.dv}, s.layout);
            call.out = arena.alloc(DType::f32, {s.tq, s.hq, s.dv}, s.layout);
            values.fill(call.q);
            values.fill(call.k);
            values.fill(call.v);
            call.mask = s.mask;
            if (s.bias) {
              call.bias = arena.alloc(DType::f32, {s.hq, s.tq, s.tk}, s.layout);
              values.fill(*call.bias, -2, 2);
            }
            return call;
          }};
}

}  // namespace

template <>
std::vector<Problem<AttentionCall>> smoke_problems<AttentionCall>() {
  using L = Layout;
  return {
      attention_problem({4, 4, 2, 2, 8, 8, Mask::none, false, L::contiguous}, 1),
      attention_problem({5, 5, 2, 1, 16, 8, Mask::causal, false, L::contiguous}, 2),
      attention_problem({3, 17, 4, 2, 8, 12, Mask::causal, true, L::padded}, 3),
      attention_problem({1, 33, 8, 2, 64, 64, Mask::causal, false, L::permuted}, 4),
  };
}

}  // namespace posenc::harness
