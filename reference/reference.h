// The oracle: one scalar fp64 kernel per family, written to read like the formula. Each validates
// its call first, computes in double, and rounds once to the output dtype. Nothing here shares a
// table or cache with the code under test.
#pragma once

#include <vector>

#include "posenc/families.h"

namespace posenc::reference {

// ω_i (i < rotary_dim/2) and the attention factor of one scaling, in fp64. Validates the scaling
// (posenc::Error on bad input); rope_frequencies, rope_cache and rope all read it.
struct RopeFrequencies {
  std::vector<double> inv_freq;
  double attention_factor = 1;
};
RopeFrequencies frequencies(int64_t rotary_dim, double base, const RopeScaling& scaling);

// Rotates every head of x[t] into out[t] by the per-pair (cos, sin) of that token, pair i being
// dims (i, i + rotary_dim/2) half-split or (2i, 2i + 1) interleaved; rope, mrope and vision_rope
// all read it. Both elements of a pair are read before either is written, so out may be x itself
// (in place). The tail dims are copied bit for bit (a NaN keeps its payload); in place they are
// not touched at all.
void rotate_token(RopeLayout layout, int64_t rotary_dim, const Tensor& x, const Tensor& out,
                  int64_t t, const std::vector<double>& cos, const std::vector<double>& sin);

// One kernel per family, named after it: reference::rope(call), ...
#define POSENC_FAMILY(name, Call, NAME) void name(const Call& call);
#include "posenc/families.inc"

// The pure functions behind alibi() and t5(), for golden tests.
// slope of head h in [0, n_heads), n_heads ≥ 1 (see alibi.h).
double alibi_slope(int64_t h, int64_t n_heads, double max_bias);
// Bucket of relative_position = k_pos − q_pos for parameters T5Call::validate() accepts, evaluated
// as Hugging Face's float32 _relative_position_bucket (see t5.h).
int64_t t5_bucket(int64_t relative_position, bool bidirectional, int64_t n_buckets,
                  int64_t max_distance);

}  // namespace posenc::reference
