/* posenc plugin ABI: the rope_frequencies family (posenc/rope_frequencies.h), its variant bits,
 * constants and argument struct. A library with rope_frequencies kernels includes this header;
 * posenc/plugin.h has the rest. */
#ifndef POSENC_PLUGIN_ROPE_FREQUENCIES_H_
#define POSENC_PLUGIN_ROPE_FREQUENCIES_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct posenc_rope_frequencies_args {
  int64_t rotary_dim;
  double base;
  posenc_rope_scaling scaling;
  const DLTensor* inv_freq;         /* out, f64 [rotary_dim/2] */
  const DLTensor* attention_factor; /* out, f64 [1] */
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_ROPE_FREQUENCIES_H_ */
