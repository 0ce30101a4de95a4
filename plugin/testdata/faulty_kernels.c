/* Test-only plugin: sinusoidal kernels that go wrong in every way isolation must survive. Each is
 * called with a valid call (out, and x for "writes_input"). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "posenc/plugin/sinusoidal.h"

static int* volatile nowhere = (int*)16; /* a fault the compiler can't see coming */

static float* out_data(const posenc_sinusoidal_args* a) { return (float*)a->out->data; }
static int64_t out_elements(const posenc_sinusoidal_args* a) {
  return a->out->shape[0] * a->out->strides[0];
}

static int segfault(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)a, (void)e;
  *nowhere = 1;
  return POSENC_OK;
}
static int hang(const posenc_sinusoidal_args* a, posenc_error* e) {
  volatile int forever = 1;
  (void)a, (void)e;
  while (forever) {
  }
  return POSENC_OK;
}
static int past_end(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)e;
  out_data(a)[out_elements(a)] = 1.0f; /* one element past the last row */
  return POSENC_OK;
}
static int before_start(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)e;
  out_data(a)[-1] = 1.0f;
  return POSENC_OK;
}
static int writes_input(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)e;
  ((float*)a->x->data)[0] = 42.0f;
  return POSENC_OK;
}
static volatile float sink;
/* Read x one float past its last element (16 bytes: a whole SSE vector), or one before its first.
 */
static int reads_past_x(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)e;
  sink = ((const float*)a->x->data)[a->x->shape[0] * a->x->strides[0] + 3];
  return POSENC_OK;
}
static int reads_before_x(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)e;
  sink = ((const float*)a->x->data)[-1];
  return POSENC_OK;
}
static int writes_out(const posenc_sinusoidal_args* a, posenc_error* e) {
  int64_t t, c;
  (void)e;
  for (t = 0; t < a->out->shape[0]; ++t)
    for (c = 0; c < a->out->shape[1]; ++c)
      out_data(a)[t * a->out->strides[0] + c * a->out->strides[1]] = (float)(t * 1000 + c);
  return POSENC_OK;
}
static int exits(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)a, (void)e;
  exit(3);
}
static int aborts(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)a, (void)e;
  fprintf(stderr, "faulty: about to abort\n");
  abort();
}
static int fails(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)a;
  snprintf(e->message, sizeof e->message, "no GPU found");
  return POSENC_FAILED;
}
static int rejects(const posenc_sinusoidal_args* a, posenc_error* e) {
  return posenc_reject(e, "base", a->base, "must be 10000 for this kernel");
}
static int unterminated_error(const posenc_sinusoidal_args* a, posenc_error* e) {
  int i;
  (void)a;
  for (i = 0; i < (int)sizeof e->argument; ++i) e->argument[i] = 'a';
  for (i = 0; i < (int)sizeof e->value; ++i) e->value[i] = 'v';
  for (i = 0; i < (int)sizeof e->message; ++i) e->message[i] = 'm';
  return POSENC_INVALID_ARGUMENT;
}

#define ENTRY(fn)                                                              \
  {                                                                            \
    .name = #fn, .family = POSENC_FAMILY_SINUSOIDAL, .variants = ~(uint64_t)0, \
    .run.sinusoidal = fn                                                       \
  }

static const posenc_kernel kKernels[] = {
    ENTRY(segfault),
    ENTRY(hang),
    ENTRY(past_end),
    ENTRY(before_start),
    ENTRY(writes_input),
    ENTRY(reads_past_x),
    ENTRY(reads_before_x),
    ENTRY(writes_out),
    ENTRY(exits),
    ENTRY(aborts),
    ENTRY(fails),
    ENTRY(rejects),
    ENTRY(unterminated_error),
};
static const posenc_plugin kPlugin = {POSENC_PLUGIN_ABI_VERSION,
                                      sizeof kKernels / sizeof kKernels[0], kKernels};

POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &kPlugin; }
