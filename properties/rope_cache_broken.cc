// rope_cache's broken kernels for the self-test (selftest.h), beside its properties
// (properties/rope_cache.cc). Each computes in fp64 and rounds once, like the reference, so that
// the bug is the only thing wrong with it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "posenc/error.h"
#include "properties/harness.h"
#include "properties/selftest.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

enum class CacheBug {
  no_attention_factor,  // stores cos θ and sin θ, forgetting the attention factor
  off_by_one,           // row p holds position p + 1
  omega_i_over_d,       // ω_i = base^(−i/d)
  f32_angles,           // θ = float(p)·float(ω)
  chunked_f32_angles,   // per thread chunk of rows, θ advances by a running f32 sum
};

void cache_with(CacheBug bug, const RopeCacheCall& call) {
  call.validate();
  const int64_t rows = call.cos.shape[0], half = call.rotary_dim / 2;
  const auto r = reference::frequencies(call.rotary_dim, call.base, call.scaling);
  const double a = bug == CacheBug::no_attention_factor ? 1.0 : r.attention_factor;
  const int threads = resolve_threads(call.threads);
  const int64_t chunk = std::max<int64_t>((rows + threads - 1) / threads, 1);
  for (int64_t i = 0; i < half; ++i) {
    double omega = r.inv_freq[i];
    if (bug == CacheBug::omega_i_over_d)
      omega = std::pow(call.base, -static_cast<double>(i) / static_cast<double>(call.rotary_dim));
    float running = 0;
    for (int64_t p = 0; p < rows; ++p) {
      const int64_t position = p + (bug == CacheBug::off_by_one ? 1 : 0);
      double angle = static_cast<double>(position) * omega;
      if (bug == CacheBug::f32_angles)
        angle = static_cast<float>(position) * static_cast<float>(omega);
      if (bug == CacheBug::chunked_f32_angles) {
        running = p % chunk == 0 ? static_cast<float>(angle) : running + static_cast<float>(omega);
        angle = running;
      }
      store(call.cos, call.cos.offset(p, i), a * std::cos(angle));
      store(call.sin, call.sin.offset(p, i), a * std::sin(angle));
    }
  }
}

}  // namespace

template <>
std::vector<Broken<RopeCacheCall>> broken_implementations<RopeCacheCall>() {
  using B = CacheBug;
  auto make = [](const char* name, B bug, bool threaded = false) {
    return broken_kernel<RopeCacheCall>(name, bug, cache_with, 1, threaded);
  };
  std::vector<Broken<RopeCacheCall>> list = {
      {make("no_attention_factor", B::no_attention_factor),
       "stores cos θ and sin θ without the attention factor", "rope_cache.pythagorean"},
      {make("off_by_one", B::off_by_one), "row p holds position p + 1", "rope_cache.row0"},
      {make("omega_i_over_d", B::omega_i_over_d), "ω exponent i/d instead of 2i/d",
       "rope_cache.rotation"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32", "rope_cache.differential"},
      {make("chunked_f32_angles", B::chunked_f32_angles, true),
       "each thread's rows advance the angle by a running f32 sum", "rope_cache.threads"},
  };
  add_generic(list, "rope_cache");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<RopeCacheCall>() {
  return {};
}

}  // namespace posenc::harness
