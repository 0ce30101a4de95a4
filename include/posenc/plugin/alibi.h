/* posenc plugin ABI: the alibi family (posenc/alibi.h), its variant bits, constants and argument
 * struct. A library with alibi kernels includes this header; posenc/plugin.h has the rest. */
#ifndef POSENC_PLUGIN_ALIBI_H_
#define POSENC_PLUGIN_ALIBI_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSENC_VARIANT_ALIBI_CAUSAL ((uint64_t)1 << 8)
#define POSENC_VARIANT_ALIBI_SLOPES ((uint64_t)1 << 9) /* slopes output requested */

struct posenc_alibi_args {
  int64_t n_heads;
  double max_bias;
  int32_t causal;
  const DLTensor* q_positions; /* int [tq] */
  const DLTensor* k_positions; /* int [tk] */
  const DLTensor* bias;        /* out [n_heads, tq, tk] */
  const DLTensor* slopes;      /* optional out [n_heads] */
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_ALIBI_H_ */
