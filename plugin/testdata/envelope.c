/* Test-only plugin: two kernels stating an accuracy envelope, built once against this ABI, once
 * (ABI_V1) as a version-1 library, whose shorter entries posenc must still read, and once (ABI_V2)
 * as a version-2 library; and an attention kernel that echoes the arguments it reads through its
 * version's struct. */
#include "posenc/plugin.h"

/* Writes `value` to out[0, 0] so a test sees which entry ran. */
static int write(const posenc_sinusoidal_args* a, float value) {
  float* out = (float*)((char*)a->out->data + a->out->byte_offset);
  out[0] = value;
  return POSENC_OK;
}
static int first(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)e;
  return write(a, 1);
}
static int second(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)e;
  return write(a, 2);
}

/* Version 1's attention arguments: no window_left or softcap, threads right after scale. */
typedef struct {
  const DLTensor *q, *k, *v, *out;
  int32_t mask;
  const DLTensor *q_positions, *k_positions, *bias;
  double scale;
  int32_t threads;
} attention_args_v1;

/* Writes threads, mask and (from version 3) chunk_size to out[0, 0, 0 … 2]. */
static int echo(const posenc_attention_args* args, posenc_error* e) {
  (void)e;
#if defined(ABI_V1)
  const attention_args_v1* a = (const attention_args_v1*)args;
#else
  const posenc_attention_args* a = args;
#endif
  float* out = (float*)((char*)a->out->data + a->out->byte_offset);
  out[0] = (float)a->threads;
  out[a->out->strides[2]] = (float)a->mask;
#if !defined(ABI_V1) && !defined(ABI_V2)
  out[2 * a->out->strides[2]] = (float)a->chunk_size;
#endif
  return POSENC_OK;
}
/* It claims every attention bit, a version's own and later ones alike. */
#define ECHO_VARIANTS                                                                         \
  (POSENC_VARIANT_F32 | POSENC_VARIANT_ATTENTION_CAUSAL | POSENC_VARIANT_ATTENTION_WINDOW | \
   POSENC_VARIANT_ATTENTION_CHUNKED)

#if defined(ABI_V1)
/* Version 1's entry: version 2's without its trailing envelope fields. */
typedef struct {
  const char* name;
  uint32_t family;
  uint32_t flags;
  uint64_t variants;
  double bound;
  union {
    posenc_sinusoidal_fn sinusoidal;
    posenc_attention_fn attention;
    void (*any)(void);
  } run;
} kernel_v1;
static const kernel_v1 kKernels[3] = {
    {"first", POSENC_FAMILY_SINUSOIDAL, 0, POSENC_VARIANT_F32, 3, {first}},
    {"second", POSENC_FAMILY_SINUSOIDAL, 0, POSENC_VARIANT_F32, 0, {second}},
    {"echo", POSENC_FAMILY_ATTENTION, 0, ECHO_VARIANTS, 0, {.attention = echo}},
};
static const posenc_plugin kPlugin = {1, 3, (const posenc_kernel*)kKernels};
#else
static const posenc_kernel kKernels[3] = {
    {.name = "first",
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = POSENC_VARIANT_F32,
     .bound = 3,
     .run.sinusoidal = first,
     .bound_bf16 = 2,
     .bound_f16 = 5,
     .max_position = 4096},
    {.name = "second",
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = POSENC_VARIANT_F32,
     .run.sinusoidal = second},
    {.name = "echo",
     .family = POSENC_FAMILY_ATTENTION,
     .variants = ECHO_VARIANTS,
     .run.attention = echo},
};
#if defined(ABI_V2)
static const posenc_plugin kPlugin = {2, 3, kKernels};
#else
static const posenc_plugin kPlugin = {POSENC_PLUGIN_ABI_VERSION, 3, kKernels};
#endif
#endif

POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &kPlugin; }
