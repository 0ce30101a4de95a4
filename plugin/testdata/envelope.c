/* Test-only plugin: two kernels stating an accuracy envelope (and, from version 3, conventions),
 * built once against this ABI and as a version-1 (ABI_V1) and a version-2 (ABI_V2) library, whose
 * shorter entries posenc must still read. Beside them (not in version 1) an attention kernel that
 * declares every attention variant bit: a version-2 one keeps only the bits version 2 defines. */
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
    void (*any)(void);
  } run;
} kernel_v1;
static const kernel_v1 kKernels[2] = {
    {"first", POSENC_FAMILY_SINUSOIDAL, 0, POSENC_VARIANT_F32, 3, {first}},
    {"second", POSENC_FAMILY_SINUSOIDAL, 0, POSENC_VARIANT_F32, 0, {second}},
};
static const posenc_plugin kPlugin = {1, 2, (const posenc_kernel*)kKernels};
#else
static int attention(const posenc_attention_args* a, posenc_error* e) {
  (void)a;
  (void)e;
  return POSENC_OK;
}
#if defined(ABI_V2)
/* Version 2's entry: version 3's without its trailing conventions. */
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
  double bound_bf16, bound_f16;
  int64_t max_position;
} kernel_v2;
static const kernel_v2 kKernels[3] = {
    {"first",
     POSENC_FAMILY_SINUSOIDAL,
     0,
     POSENC_VARIANT_F32,
     3,
     {.sinusoidal = first},
     2,
     5,
     4096},
    {"second", POSENC_FAMILY_SINUSOIDAL, 0, POSENC_VARIANT_F32, 0, {.sinusoidal = second}, 0, 0, 0},
    {"attention",
     POSENC_FAMILY_ATTENTION,
     0,
     POSENC_VARIANT_F32 | ((uint64_t)0xFF << 8),
     1,
     {.attention = attention},
     0,
     0,
     0},
};
static const posenc_plugin kPlugin = {2, 3, (const posenc_kernel*)kKernels};
#else
static const posenc_kernel kKernels[3] = {
    {.name = "first",
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = POSENC_VARIANT_F32,
     .bound = 3,
     .run.sinusoidal = first,
     .bound_bf16 = 2,
     .bound_f16 = 5,
     .max_position = 4096,
     .conventions = POSENC_CONVENTION_FINITE_INPUTS | POSENC_CONVENTION_POSITIONS_I32},
    {.name = "second",
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = POSENC_VARIANT_F32,
     .run.sinusoidal = second},
    {.name = "attention",
     .family = POSENC_FAMILY_ATTENTION,
     .variants = POSENC_VARIANT_F32 | ((uint64_t)0xFF << 8),
     .bound = 1,
     .run.attention = attention},
};
static const posenc_plugin kPlugin = {POSENC_PLUGIN_ABI_VERSION, 3, kKernels};
#endif
#endif

POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &kPlugin; }
