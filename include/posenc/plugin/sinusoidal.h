/* posenc plugin ABI: the sinusoidal family (posenc/sinusoidal.h), its variant bits, constants and
 * argument struct. A library with sinusoidal kernels includes this header; posenc/plugin.h has the
 * rest. */
#ifndef POSENC_PLUGIN_SINUSOIDAL_H_
#define POSENC_PLUGIN_SINUSOIDAL_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define POSENC_VARIANT_SINUSOIDAL_ADD ((uint64_t)1 << 8)       /* x given */
#define POSENC_VARIANT_SINUSOIDAL_POSITIONS ((uint64_t)1 << 9) /* positions given */

struct posenc_sinusoidal_args {
  const DLTensor* out;       /* [tokens, d] */
  const DLTensor* x;         /* optional [tokens, d]: out = x + PE, else out = PE */
  const DLTensor* positions; /* optional int [tokens], else position t */
  double base;
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_SINUSOIDAL_H_ */
