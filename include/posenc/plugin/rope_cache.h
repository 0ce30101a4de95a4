/* posenc plugin ABI: the rope_cache family (posenc/rope_cache.h), its variant bits, constants and
 * argument struct. A library with rope_cache kernels includes this header; posenc/plugin.h has the
 * rest. */
#ifndef POSENC_PLUGIN_ROPE_CACHE_H_
#define POSENC_PLUGIN_ROPE_CACHE_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct posenc_rope_cache_args {
  int64_t rotary_dim;
  double base;
  posenc_rope_scaling scaling;
  const DLTensor* cos; /* out [rows, rotary_dim/2] */
  const DLTensor* sin; /* out [rows, rotary_dim/2] */
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_ROPE_CACHE_H_ */
