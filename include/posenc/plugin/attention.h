/* posenc plugin ABI: the attention family (posenc/attention.h), its variant bits, constants and
 * argument struct. A library with attention kernels includes this header; posenc/plugin.h has the
 * rest. */
#ifndef POSENC_PLUGIN_ATTENTION_H_
#define POSENC_PLUGIN_ATTENTION_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSENC_VARIANT_ATTENTION_CAUSAL ((uint64_t)1 << 8)
#define POSENC_VARIANT_ATTENTION_BIAS ((uint64_t)1 << 9)
#define POSENC_VARIANT_ATTENTION_GQA ((uint64_t)1 << 10) /* hq != hkv */
#define POSENC_VARIANT_ATTENTION_POSITIONS ((uint64_t)1 << 11)
#define POSENC_VARIANT_ATTENTION_WINDOW ((uint64_t)1 << 12)  /* window_left >= 0 */
#define POSENC_VARIANT_ATTENTION_SOFTCAP ((uint64_t)1 << 13) /* softcap > 0 */
#define POSENC_VARIANT_ATTENTION_LSE ((uint64_t)1 << 14)     /* lse given (version 3) */
#define POSENC_VARIANT_ATTENTION_CHUNKED ((uint64_t)1 << 15) /* chunk_size > 0 (version 3) */
#define POSENC_VARIANT_ATTENTION_SINKS ((uint64_t)1 << 16)   /* sinks given (version 3) */
#define POSENC_VARIANT_ATTENTION_ALIBI ((uint64_t)1 << 17)   /* alibi_slopes given (version 3) */

enum { POSENC_MASK_NONE = 0, POSENC_MASK_CAUSAL = 1 };

struct posenc_attention_args {
  const DLTensor* q;           /* [tq, hq, d] */
  const DLTensor* k;           /* [tk, hkv, d] */
  const DLTensor* v;           /* [tk, hkv, dv] */
  const DLTensor* out;         /* [tq, hq, dv] */
  int32_t mask;                /* POSENC_MASK_* */
  const DLTensor* q_positions; /* optional, int [tq]; read when causal, windowed, chunked, ALiBi */
  const DLTensor* k_positions; /* optional, int [tk] */
  const DLTensor* bias;        /* optional, [hq, tq, tk] */
  double scale;                /* NaN means 1/sqrt(d) */
  int64_t window_left;         /* -1: none; key j visible iff q_pos - k_pos[j] <= window_left */
  double softcap;              /* 0: none; logit = softcap * tanh(scale * q.k / softcap), + bias */
  int32_t threads;
  /* Version 3. Optional out, f32 [tq, hq]: the NATURAL log of each row's softmax denominator,
   * sum_j exp(score_j) over the keys it sees (FlashAttention's softmax_lse; FlashInfer's is log2);
   * -inf for a row that sees no key. */
  const DLTensor* lse;
  /* Version 3 (appended: a version-2 kernel reads the struct's first part as its own) */
  int64_t chunk_size;           /* 0: none; key j visible iff q_pos / chunk_size == k_pos[j] /
                                   chunk_size, floor division (Llama 4) */
  const DLTensor* sinks;        /* optional f32 [hq]: a logit per query head in the softmax's
                                   denominator only, used as given (GPT-OSS); -inf: none */
  const DLTensor* alibi_slopes; /* optional f32 [hq]: adds (float)(slope * -|q_pos - k_pos|)
                                   after the softcap: softcap(scale q.k) + alibi + bias */
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_ATTENTION_H_ */
