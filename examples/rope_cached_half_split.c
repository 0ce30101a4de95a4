/* A narrow plugin: rotary embeddings of q alone, half-split pairs, rotated by a given cos/sin
 * cache, f32 only; the shape of an XNNPACK-style f32 RoPE microkernel fed a gathered table. It
 * declares just that (POSENC_VARIANT_F32 | ROPE_HALF_SPLIT | ROPE_CACHED: no keys, no strides, no
 * in-place calls, no angles of its own), and posenc generates every case inside it: the
 * differential runs the profile's full case count, and the properties that need more (keys, the
 * inverse, angles on the fly) are skipped naming the variant they need.
 *
 *   cc -O2 -shared -fPIC -I<posenc>/include rope_cached_half_split.c -o librope_cached.so -lm
 *   posenc validate --kernel ./librope_cached.so */
#include <string.h>

#include "checks.h"
#include "posenc/plugin/rope.h"

static const float* f32_in(const DLTensor* t) { return (const float*)element_ptr(t); }
static float* f32_out(const DLTensor* t) { return (float*)element_ptr(t); }

/* posenc's RopeCall::validate for the calls it declares, in the same order. */
static int check_rope(const posenc_rope_args* a, posenc_error* e) {
  int64_t tokens, head_dim, rows;
  int d;
  if (a->threads < 0) return posenc_reject(e, "threads", a->threads, "must be >= 0");
  CHECK(check_view(e, "q", a->q, 3, KIND_F32));
  CHECK(check_view(e, "q_out", a->q_out, 3, KIND_F32));
  CHECK(check_view(e, "positions", a->positions, 1, KIND_INDEX));
  tokens = a->q->shape[0];
  head_dim = a->q->shape[2];
  if (a->q->shape[1] < 1)
    return posenc_reject(e, "q.shape[1]", a->q->shape[1], "heads must be >= 1");
  if (head_dim < 2) return posenc_reject(e, "q.shape[2]", head_dim, "head_dim must be >= 2");
  if (a->rotary_dim < 2 || a->rotary_dim % 2)
    return posenc_reject(e, "rotary_dim", a->rotary_dim, "must be even and >= 2");
  if (a->rotary_dim > head_dim)
    return posenc_reject(e, "rotary_dim", a->rotary_dim, "must be <= head_dim");
  if (a->layout != POSENC_LAYOUT_HALF_SPLIT)
    return posenc_reject(e, "layout", a->layout, "this kernel rotates half-split pairs only");
  for (d = 0; d < 3; ++d) CHECK(check_dim(e, "q_out", a->q_out, d, a->q->shape[d]));
  CHECK(check_dim(e, "positions", a->positions, 0, tokens));
  if (a->k || a->k_out)
    return posenc_reject_text(e, a->k ? "k" : "k_out", "given", "this kernel rotates q only");
  if (!a->cos != !a->sin)
    return posenc_reject_text(e, "sin", a->sin ? "given" : "absent", "cos and sin come together");
  if (!a->cos) return posenc_reject_text(e, "cos", "absent", "this kernel reads a cos/sin cache");
  CHECK(check_view(e, "cos", a->cos, 2, KIND_F32));
  CHECK(check_view(e, "sin", a->sin, 2, KIND_F32));
  CHECK(check_dim(e, "cos", a->cos, 1, a->rotary_dim / 2));
  rows = a->cos->shape[0];
  CHECK(check_dim(e, "sin", a->sin, 0, rows));
  CHECK(check_dim(e, "sin", a->sin, 1, a->rotary_dim / 2));
  CHECK(check_positions(e, "positions", a->positions, 0,
                        rows - 1 < kMaxPosition ? rows - 1 : kMaxPosition));
  CHECK(check_no_self_overlap(e, "q_out", a->q_out));
  CHECK(check_no_overlap(e, "q_out", a->q_out, "q", a->q, 1));
  CHECK(check_no_overlap(e, "q_out", a->q_out, "positions", a->positions, 0));
  CHECK(check_no_overlap(e, "q_out", a->q_out, "cos", a->cos, 0));
  CHECK(check_no_overlap(e, "q_out", a->q_out, "sin", a->sin, 0));
  return POSENC_OK;
}

/* (x0, x1) = (x[i], x[i + half]) turns by the cache's row: products in double, rounded once. */
static int rope(const posenc_rope_args* a, posenc_error* e) {
  const int64_t half = a->rotary_dim / 2;
  int64_t t, h, i, j;
  CHECK(check_rope(a, e));
  for (t = 0; t < a->q->shape[0]; ++t) {
    const int64_t p = load_index(a->positions, t);
    const float* c = f32_in(a->cos) + p * stride_of(a->cos, 0);
    const float* s = f32_in(a->sin) + p * stride_of(a->sin, 0);
    for (h = 0; h < a->q->shape[1]; ++h) {
      const float* x = f32_in(a->q) + t * stride_of(a->q, 0) + h * stride_of(a->q, 1);
      float* y = f32_out(a->q_out) + t * stride_of(a->q_out, 0) + h * stride_of(a->q_out, 1);
      for (i = 0; i < half; ++i) {
        const double x0 = x[i], x1 = x[i + half];
        y[i] = (float)(x0 * c[i] - x1 * s[i]);
        y[i + half] = (float)(x0 * s[i] + x1 * c[i]);
      }
      for (j = a->rotary_dim; j < a->q->shape[2]; ++j) memcpy(&y[j], &x[j], sizeof(float));
    }
  }
  return POSENC_OK;
}

static const posenc_kernel kKernels[] = {
    {.name = "cached_half_split",
     .family = POSENC_FAMILY_ROPE,
     .variants = POSENC_VARIANT_F32 | POSENC_VARIANT_ROPE_HALF_SPLIT | POSENC_VARIANT_ROPE_CACHED,
     .bound = 1,
     .run.rope = rope},
};

static const posenc_plugin kPlugin = {POSENC_PLUGIN_ABI_VERSION,
                                      sizeof kKernels / sizeof kKernels[0], kKernels};

POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &kPlugin; }
