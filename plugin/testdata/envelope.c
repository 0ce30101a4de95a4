/* Test-only plugin: two kernels stating an accuracy envelope (and, from version 3, conventions),
 * built once against this ABI and as a version-1 (ABI_V1) and a version-2 (ABI_V2) library, whose
 * shorter entries posenc must still read. Beside them an attention kernel that echoes each argument
 * it reads through its version's struct and claims every attention variant bit: an older library
 * keeps only the bits its version defines. */
#include "posenc/plugin/attention.h"
#include "posenc/plugin/sinusoidal.h"

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
/* Version 1's attention arguments, as its posenc/plugin.h declared them: no window_left or softcap,
 * threads right after scale. */
typedef struct {
  const DLTensor *q, *k, *v, *out;
  int32_t mask;
  const DLTensor *q_positions, *k_positions, *bias;
  double scale;
  int32_t threads;
} attention_args;
#else
typedef posenc_attention_args attention_args;
#endif

/* Element 0 of an f32 or int64 view; -100 for an absent one. */
static float f32_at(const DLTensor* t) {
  return t ? *(const float*)((const char*)t->data + t->byte_offset) : -100;
}
static float i64_at(const DLTensor* t) {
  return t ? (float)*(const int64_t*)((const char*)t->data + t->byte_offset) : -100;
}

/* Writes what it read to out[0, 0, 0 ... 15] in the struct's order (-100: a later version's field),
 * and 42 to lse[0, 0]. */
static int echo(const attention_args* a, posenc_error* e) {
  float* out = (float*)((char*)a->out->data + a->out->byte_offset);
  const float seen[16] = {
    f32_at(a->q),
    f32_at(a->k),
    f32_at(a->v),
    (float)a->out->shape[2],
    (float)a->mask,
    i64_at(a->q_positions),
    i64_at(a->k_positions),
    f32_at(a->bias),
    (float)a->scale,
#if defined(ABI_V1)
    -100,
    -100,
#else
    (float)a->window_left,
    (float)a->softcap,
#endif
    (float)a->threads,
#if defined(ABI_V1) || defined(ABI_V2)
    -100,
    -100,
    -100,
    -100
#else
    a->lse ? 1.0f : 0.0f,
    (float)a->chunk_size,
    f32_at(a->sinks),
    f32_at(a->alibi_slopes)
#endif
  };
  int c;
  (void)e;
  for (c = 0; c < 16; ++c) out[c * a->out->strides[2]] = seen[c];
#if !defined(ABI_V1) && !defined(ABI_V2)
  if (a->lse) *(float*)((char*)a->lse->data + a->lse->byte_offset) = 42;
#endif
  return POSENC_OK;
}
#define ECHO_VARIANTS (POSENC_VARIANT_F32 | ((uint64_t)0x3FF << 8)) /* every attention bit */

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
    int (*attention)(const attention_args*, posenc_error*);
    void (*any)(void);
  } run;
} kernel_v1;
static const kernel_v1 kKernels[3] = {
    {"first", POSENC_FAMILY_SINUSOIDAL, 0, POSENC_VARIANT_F32, 3, {first}},
    {"second", POSENC_FAMILY_SINUSOIDAL, 0, POSENC_VARIANT_F32, 0, {second}},
    {"attention", POSENC_FAMILY_ATTENTION, 0, ECHO_VARIANTS, 1, {.attention = echo}},
};
static const posenc_plugin kPlugin = {1, 3, (const posenc_kernel*)kKernels};
#else
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
    {"attention", POSENC_FAMILY_ATTENTION, 0, ECHO_VARIANTS, 1, {.attention = echo}, 0, 0, 0},
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
     .variants = ECHO_VARIANTS,
     .bound = 1,
     .run.attention = echo},
};
static const posenc_plugin kPlugin = {POSENC_PLUGIN_ABI_VERSION, 3, kKernels};
#endif
#endif

POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &kPlugin; }
