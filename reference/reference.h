// The oracle: one scalar fp64 kernel per family, written to read like the formula. Each validates
// its call first, computes in double, and rounds once to the output dtype. Nothing here shares a
// table or cache with the code under test.
#pragma once

#include <vector>

#include "posenc/absolute.h"
#include "posenc/alibi.h"
#include "posenc/attention.h"
#include "posenc/rope.h"
#include "posenc/rope_cache.h"
#include "posenc/rope_frequencies.h"
#include "posenc/sinusoidal.h"
#include "posenc/t5.h"

namespace posenc::reference {

// ω_i (i < rotary_dim/2) and the attention factor of one scaling, in fp64. Validates the scaling
// (posenc::Error on bad input); rope_frequencies, rope_cache and rope all read it.
struct RopeFrequencies {
  std::vector<double> inv_freq;
  double attention_factor = 1;
};
RopeFrequencies frequencies(int64_t rotary_dim, double base, const RopeScaling& scaling);

void attention(const AttentionCall& call);
void absolute(const AbsoluteCall& call);
void sinusoidal(const SinusoidalCall& call);
void rope_frequencies(const RopeFrequenciesCall& call);
void rope_cache(const RopeCacheCall& call);
void rope(const RopeCall& call);
void alibi(const AlibiCall& call);
void t5(const T5Call& call);

// The pure functions behind alibi() and t5(), for golden tests.
// slope of head h in [0, n_heads), n_heads ≥ 1 (see alibi.h).
double alibi_slope(int64_t h, int64_t n_heads, double max_bias);
// Bucket of relative_position = k_pos − q_pos for parameters T5Call::validate() accepts, evaluated
// as Hugging Face's float32 _relative_position_bucket (see t5.h).
int64_t t5_bucket(int64_t relative_position, bool bidirectional, int64_t n_buckets,
                  int64_t max_distance);

}  // namespace posenc::reference
