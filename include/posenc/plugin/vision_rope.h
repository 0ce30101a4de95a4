/* posenc plugin ABI: the vision_rope family (posenc/vision_rope.h), its variant bits, constants
 * and argument struct. A library with vision_rope kernels includes this header; posenc/plugin.h
 * has the rest. */
#ifndef POSENC_PLUGIN_VISION_ROPE_H_
#define POSENC_PLUGIN_VISION_ROPE_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSENC_VARIANT_VISION_ROPE_HALF_SPLIT ((uint64_t)1 << 8)
#define POSENC_VARIANT_VISION_ROPE_INTERLEAVED ((uint64_t)1 << 9) /* pairs (2i, 2i + 1) */
#define POSENC_VARIANT_VISION_ROPE_PARTIAL ((uint64_t)1 << 10)    /* rotary_dim < head_dim */
#define POSENC_VARIANT_VISION_ROPE_INVERSE ((uint64_t)1 << 11)
#define POSENC_VARIANT_VISION_ROPE_KEY ((uint64_t)1 << 12)          /* k given */
#define POSENC_VARIANT_VISION_ROPE_AXIAL ((uint64_t)1 << 13)        /* Qwen2-VL, Llama 4 */
#define POSENC_VARIANT_VISION_ROPE_PIXTRAL ((uint64_t)1 << 14)      /* odd ω, second axis */
#define POSENC_VARIANT_VISION_ROPE_COLUMN_FIRST ((uint64_t)1 << 15) /* Llama 4 */
#define POSENC_VARIANT_VISION_ROPE_OFFSET ((uint64_t)1 << 16)       /* position_offset != 0 */

/* 2D vision RoPE (posenc/vision_rope.h): pair i < d/4 turns by the first axis, the rest by the
 * second, at positions[t, axis] + position_offset. */
enum { POSENC_VISION_ROPE_AXIAL = 0, POSENC_VISION_ROPE_PIXTRAL = 1 };
enum { POSENC_VISION_ROW_FIRST = 0, POSENC_VISION_COLUMN_FIRST = 1 };

struct posenc_vision_rope_args {
  const DLTensor* q;         /* [tokens, hq, head_dim] */
  const DLTensor* q_out;     /* [tokens, hq, head_dim] */
  const DLTensor* k;         /* optional [tokens, hk, head_dim] */
  const DLTensor* k_out;     /* given exactly when k is */
  const DLTensor* positions; /* int [tokens, 2]: row, column */
  int64_t rotary_dim;        /* a multiple of 4 */
  int32_t convention;        /* POSENC_VISION_ROPE_* */
  int32_t axis_order;        /* POSENC_VISION_ROW_FIRST or POSENC_VISION_COLUMN_FIRST */
  int64_t position_offset;   /* added to every position (Llama 4: 1) */
  int32_t layout;            /* POSENC_LAYOUT_* */
  int32_t inverse;
  double base;
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_VISION_ROPE_H_ */
