/* posenc plugin ABI: the t5 family (posenc/t5.h), its variant bits, constants and argument
 * struct. A library with t5 kernels includes this header; posenc/plugin.h has the rest. */
#ifndef POSENC_PLUGIN_T5_H_
#define POSENC_PLUGIN_T5_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSENC_VARIANT_T5_BIDIRECTIONAL ((uint64_t)1 << 8)
#define POSENC_VARIANT_T5_CAUSAL ((uint64_t)1 << 9)

struct posenc_t5_args {
  int32_t bidirectional;
  int64_t n_buckets;
  int64_t max_distance;
  const DLTensor* q_positions; /* int [tq] */
  const DLTensor* k_positions; /* int [tk] */
  const DLTensor* table;       /* [n_buckets, heads] */
  const DLTensor* bias;        /* out [heads, tq, tk] */
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_T5_H_ */
