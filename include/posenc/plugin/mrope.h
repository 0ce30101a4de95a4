/* posenc plugin ABI: the mrope family (posenc/mrope.h), its variant bits, constants and argument
 * struct. A library with mrope kernels includes this header; posenc/plugin.h has the rest. */
#ifndef POSENC_PLUGIN_MROPE_H_
#define POSENC_PLUGIN_MROPE_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSENC_VARIANT_MROPE_HALF_SPLIT ((uint64_t)1 << 8)
#define POSENC_VARIANT_MROPE_INTERLEAVED ((uint64_t)1 << 9) /* pair layout (2i, 2i + 1) */
#define POSENC_VARIANT_MROPE_PARTIAL ((uint64_t)1 << 10)    /* rotary_dim < head_dim */
#define POSENC_VARIANT_MROPE_INVERSE ((uint64_t)1 << 11)
#define POSENC_VARIANT_MROPE_KEY ((uint64_t)1 << 12)       /* k given */
#define POSENC_VARIANT_MROPE_SECTIONED ((uint64_t)1 << 13) /* Qwen2-VL, Qwen2.5-VL */
#define POSENC_VARIANT_MROPE_CYCLED ((uint64_t)1 << 14)    /* Qwen3-VL's interleaved axes */

/* M-RoPE (posenc/mrope.h): pair i turns by the position of its axis, positions[t, axis]. */
enum { POSENC_MROPE_SECTIONED = 0, POSENC_MROPE_INTERLEAVED = 1 };

struct posenc_mrope_args {
  const DLTensor* q;         /* [tokens, hq, head_dim] */
  const DLTensor* q_out;     /* [tokens, hq, head_dim] */
  const DLTensor* k;         /* optional [tokens, hk, head_dim] */
  const DLTensor* k_out;     /* given exactly when k is */
  const DLTensor* positions; /* int [tokens, 3]: temporal, height, width */
  int64_t rotary_dim;
  int64_t mrope_section[3]; /* pairs per axis, summing to rotary_dim/2 */
  int32_t convention;       /* POSENC_MROPE_* */
  int32_t layout;           /* POSENC_LAYOUT_* */
  int32_t inverse;
  double base;
  posenc_rope_scaling scaling;
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_MROPE_H_ */
