/* Test-only plugin: examples/rope_kernels.c's correct kernels, each of which then loads a whole
 * 4-float vector at the last element of its first input, as a SIMD tail does that reads past the
 * data (XNNPACK marks its own XNN_OOB_READS): correct outputs, and a read up to 12 bytes past the
 * end of x (sinusoidal) or q (rope). Only sinusoidal.guard_bytes and rope.guard_bytes fail it.
 * Built with HANGS_ONCE instead: the correct sinusoidal kernel alone, hanging on calls of exactly
 * 7 rows with x (validate.hang_on_one_case). */
#ifdef HANGS_ONCE
#define KERNEL_NAME "hangs_once"
#else
#define KERNEL_NAME "overread"
#endif
#define posenc_plugin_kernels example_kernels /* its table, unused: ours wraps its functions */
#include "../../examples/rope_kernels.c"
#undef posenc_plugin_kernels

#ifdef HANGS_ONCE

static int hangs_once(const posenc_sinusoidal_args* a, posenc_error* e) {
  volatile int forever = 1;
  if (a->out->ndim == 2 && a->out->shape[0] == 7 && a->x)
    while (forever) {
    }
  return sinusoidal(a, e);
}

static const posenc_kernel kWrapped[] = {
    {.name = KERNEL_NAME,
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = COMMON | POSENC_VARIANT_SINUSOIDAL_ADD | POSENC_VARIANT_SINUSOIDAL_POSITIONS,
     .bound = 1,
     .run.sinusoidal = hangs_once},
};

#else

static volatile float sink;

/* The vector load at t's last element; a no-op for an absent or empty view. */
static void load_tail(const DLTensor* t) {
  int64_t last = 0, d;
  const float* data;
  if (t == NULL) return;
  data = (const float*)element_ptr(t);
  for (d = 0; d < t->ndim; ++d) {
    if (t->shape[d] == 0) return;
    last += (t->shape[d] - 1) * t->strides[d];
  }
  sink = data[last] + data[last + 1] + data[last + 2] + data[last + 3];
}

static int overread_sinusoidal(const posenc_sinusoidal_args* a, posenc_error* e) {
  const int code = sinusoidal(a, e);
  if (code == POSENC_OK && a->x) load_tail(a->x);
  return code;
}

static int overread_rope(const posenc_rope_args* a, posenc_error* e) {
  const int code = rope(a, e);
  if (code == POSENC_OK) load_tail(a->q);
  return code;
}

static const posenc_kernel kWrapped[] = {
    {.name = KERNEL_NAME,
     .family = POSENC_FAMILY_ROPE,
     .variants = COMMON | POSENC_VARIANT_ROPE_HALF_SPLIT | POSENC_VARIANT_ROPE_INTERLEAVED |
                 POSENC_VARIANT_ROPE_PARTIAL | POSENC_VARIANT_ROPE_INVERSE |
                 POSENC_VARIANT_ROPE_KEY | POSENC_VARIANT_SCALING(POSENC_SCALING_NONE) |
                 POSENC_VARIANT_SCALING(POSENC_SCALING_LINEAR),
     .bound = 1,
     .run.rope = overread_rope},
    {.name = KERNEL_NAME,
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = COMMON | POSENC_VARIANT_SINUSOIDAL_ADD | POSENC_VARIANT_SINUSOIDAL_POSITIONS,
     .bound = 1,
     .run.sinusoidal = overread_sinusoidal},
};

#endif

static const posenc_plugin kWrappedPlugin = {POSENC_PLUGIN_ABI_VERSION,
                                             sizeof kWrapped / sizeof kWrapped[0], kWrapped};
POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &kWrappedPlugin; }
