/* posenc plugin ABI: the absolute family (posenc/absolute.h), its variant bits, constants and
 * argument struct. A library with absolute kernels includes this header; posenc/plugin.h has the
 * rest. */
#ifndef POSENC_PLUGIN_ABSOLUTE_H_
#define POSENC_PLUGIN_ABSOLUTE_H_

#include "posenc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct posenc_absolute_args {
  const DLTensor* x;         /* [tokens, dim] */
  const DLTensor* table;     /* [rows, dim] */
  const DLTensor* positions; /* int [tokens], each in [0, rows) */
  const DLTensor* out;       /* [tokens, dim] */
  int32_t threads;
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_ABSOLUTE_H_ */
