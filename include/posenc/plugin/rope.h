/* posenc plugin ABI: the rope family (posenc/rope.h), its variant bits, constants and argument
 * struct. A library with rope kernels includes this header; posenc/plugin.h has the rest. */
#ifndef POSENC_PLUGIN_ROPE_H_
#define POSENC_PLUGIN_ROPE_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSENC_VARIANT_ROPE_HALF_SPLIT ((uint64_t)1 << 8)
#define POSENC_VARIANT_ROPE_INTERLEAVED ((uint64_t)1 << 9)
#define POSENC_VARIANT_ROPE_PARTIAL ((uint64_t)1 << 10) /* rotary_dim < head_dim */
#define POSENC_VARIANT_ROPE_INVERSE ((uint64_t)1 << 11)
#define POSENC_VARIANT_ROPE_CACHED ((uint64_t)1 << 12) /* cos/sin given, else on the fly */
#define POSENC_VARIANT_ROPE_KEY ((uint64_t)1 << 13)    /* k given */

struct posenc_rope_args {
  const DLTensor* q;     /* [tokens, hq, head_dim] */
  const DLTensor* q_out; /* [tokens, hq, head_dim] */
  const DLTensor* k;     /* optional [tokens, hk, head_dim] */
  const DLTensor* k_out; /* given exactly when k is */
  const DLTensor* positions;
  int64_t rotary_dim;
  int32_t layout; /* POSENC_LAYOUT_* */
  int32_t inverse;
  double base;                 /* read when no cache is given */
  posenc_rope_scaling scaling; /* read when no cache is given */
  const DLTensor* cos;         /* optional [rows, rotary_dim/2], with sin */
  const DLTensor* sin;
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_ROPE_H_ */
