/* A correct plugin: rotary embeddings (half-split and interleaved, partial rotary, inverse, keys,
 * in place, any strides; frequencies computed on the fly with no scaling or linear scaling) and
 * the sinusoidal table. Built against posenc/plugin/rope.h and posenc/plugin/sinusoidal.h only:
 *
 *   cc -O2 -shared -fPIC -I<posenc>/include rope_kernels.c -o librope_kernels.so -lm
 *   posenc validate --kernel ./librope_kernels.so
 *
 * The care that makes it right: the angle p·ω is formed and reduced in double. p reaches 2^24
 * and ω is near 1 for the first pairs, so in float the angle alone would be off by up to 1 rad.
 * rope_kernels_fp32_angles.c builds this same file with a float angle. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "posenc/plugin/rope.h"
#include "posenc/plugin/sinusoidal.h"

#ifndef ANGLE
#define ANGLE double /* the type of ω and of the angle p·ω */
#endif
#ifndef KERNEL_NAME
#define KERNEL_NAME "example"
#endif

typedef ANGLE angle_t;

static float* f32_ptr(const DLTensor* t) { return (float*)element_ptr(t); }

/* ω_i = base^(-2i/d) / linear factor, i < d/2. */
static void frequencies(angle_t* omega, int64_t d, double base, double linear) {
  int64_t i;
  for (i = 0; i < d / 2; ++i)
    omega[i] = (angle_t)(pow(base, -2.0 * (double)i / (double)d) / linear);
}

/* ---- rope ---- */

static int check_scaling(posenc_error* e, const posenc_rope_scaling* s, double base) {
  if (!(isfinite(base) && base > 0))
    return posenc_reject(e, "base", base, "must be finite and > 0");
  if (!(isnan(s->attention_factor) || (isfinite(s->attention_factor) && s->attention_factor > 0)))
    return posenc_reject(e, "scaling.attention_factor", s->attention_factor,
                         "must be finite and > 0, or NaN (derived)");
  if (s->kind == POSENC_SCALING_NONE) return POSENC_OK;
#ifdef FIXED_FREQUENCIES
  /* It accepts every kind (and then ignores it): only a nonsensical factor is refused. */
  if (s->kind != POSENC_SCALING_NTK && !(isfinite(s->factor) && s->factor > 0))
    return posenc_reject(e, "scaling.factor", s->factor, "must be finite and > 0");
  return POSENC_OK;
#endif
  if (s->kind != POSENC_SCALING_LINEAR)
    return posenc_reject(e, "scaling.kind", s->kind, "this kernel implements none and linear");
  if (!(isfinite(s->factor) && s->factor > 0))
    return posenc_reject(e, "scaling.factor", s->factor, "must be finite and > 0");
  return POSENC_OK;
}

/* posenc's RopeCall::validate, in the same order. */
static int check_rope(const posenc_rope_args* a, posenc_error* e) {
  const DLTensor* inputs[3];
  const char* input_names[3] = {"q", "positions", "k"};
  int n_inputs = 2, i, d;
  int64_t tokens, head_dim;
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
  if (a->layout != POSENC_LAYOUT_HALF_SPLIT && a->layout != POSENC_LAYOUT_INTERLEAVED)
    return posenc_reject(e, "layout", a->layout, "must be half_split or interleaved");
  for (d = 0; d < 3; ++d) CHECK(check_dim(e, "q_out", a->q_out, d, a->q->shape[d]));
  CHECK(check_dim(e, "positions", a->positions, 0, tokens));
  if (!a->k != !a->k_out)
    return posenc_reject_text(e, "k_out", a->k_out ? "given" : "absent",
                              "k and k_out come together");
  if (a->k) {
    CHECK(check_view(e, "k", a->k, 3, KIND_F32));
    CHECK(check_view(e, "k_out", a->k_out, 3, KIND_F32));
    CHECK(check_dim(e, "k", a->k, 0, tokens));
    if (a->k->shape[1] < 1)
      return posenc_reject(e, "k.shape[1]", a->k->shape[1], "heads must be >= 1");
    CHECK(check_dim(e, "k", a->k, 2, head_dim));
    for (d = 0; d < 3; ++d) CHECK(check_dim(e, "k_out", a->k_out, d, a->k->shape[d]));
  }
  if (a->cos || a->sin)
    return posenc_reject_text(e, "cos", "given", "this kernel computes its angles on the fly");
  CHECK(check_scaling(e, &a->scaling, a->base));
  CHECK(check_positions(e, "positions", a->positions, 0, kMaxPosition));
  CHECK(check_no_self_overlap(e, "q_out", a->q_out));
  inputs[0] = a->q;
  inputs[1] = a->positions;
  if (a->k) inputs[n_inputs++] = a->k;
  for (i = 0; i < n_inputs; ++i)
    CHECK(check_no_overlap(e, "q_out", a->q_out, input_names[i], inputs[i], i == 0));
  if (a->k) {
    CHECK(check_no_self_overlap(e, "k_out", a->k_out));
    for (i = 0; i < n_inputs; ++i)
      CHECK(check_no_overlap(e, "k_out", a->k_out, input_names[i], inputs[i], i == 2));
    CHECK(check_no_overlap(e, "k_out", a->k_out, "q_out", a->q_out, 0));
  }
  return POSENC_OK;
}

/* Rotates the first rotary_dim dims of every head of one token; copies the rest. */
static void rotate_token(const DLTensor* in, const DLTensor* out, int64_t t, const double* c,
                         const double* s, int64_t rotary_dim, int interleaved) {
  const int64_t half = rotary_dim / 2;
  int64_t h, i, j;
  for (h = 0; h < in->shape[1]; ++h) {
    const float* x = f32_ptr(in) + t * stride_of(in, 0) + h * stride_of(in, 1);
    float* y = f32_ptr(out) + t * stride_of(out, 0) + h * stride_of(out, 1);
    const int64_t xs = stride_of(in, 2), ys = stride_of(out, 2);
    for (i = 0; i < half; ++i) {
      const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
      const double x0 = x[a * xs], x1 = x[b * xs];
      y[a * ys] = (float)(x0 * c[i] - x1 * s[i]);
      y[b * ys] = (float)(x0 * s[i] + x1 * c[i]);
    }
    for (j = rotary_dim; j < in->shape[2]; ++j) memcpy(&y[j * ys], &x[j * xs], sizeof(float));
  }
}

static int rope(const posenc_rope_args* a, posenc_error* e) {
  const int64_t half = a->rotary_dim / 2;
  const double linear = a->scaling.kind == POSENC_SCALING_LINEAR ? a->scaling.factor : 1.0;
  const double factor = isnan(a->scaling.attention_factor) ? 1.0 : a->scaling.attention_factor;
  angle_t* omega;
  double *c, *s;
  int64_t t, i;
  CHECK(check_rope(a, e));
  omega = malloc(sizeof *omega * half);
  c = malloc(sizeof *c * half);
  s = malloc(sizeof *s * half);
  if (!omega || !c || !s) {
    free(omega), free(c), free(s);
    snprintf(e->message, sizeof e->message, "out of memory");
    return POSENC_FAILED;
  }
#ifdef FIXED_FREQUENCIES
  (void)linear;
  FIXED_FREQUENCIES(omega, a->rotary_dim); /* one model's, whatever base and scaling say */
#else
  frequencies(omega, a->rotary_dim, a->base, linear);
#endif
  for (t = 0; t < a->q->shape[0]; ++t) {
    const angle_t p = (angle_t)load_index(a->positions, t);
    for (i = 0; i < half; ++i) {
      const angle_t theta = a->inverse ? -(p * omega[i]) : p * omega[i];
      c[i] = factor * cos(theta);
      s[i] = factor * sin(theta);
    }
    rotate_token(a->q, a->q_out, t, c, s, a->rotary_dim, a->layout == POSENC_LAYOUT_INTERLEAVED);
    if (a->k)
      rotate_token(a->k, a->k_out, t, c, s, a->rotary_dim, a->layout == POSENC_LAYOUT_INTERLEAVED);
  }
  free(omega), free(c), free(s);
  return POSENC_OK;
}

/* ---- sinusoidal ---- */

/* posenc's SinusoidalCall::validate, in the same order. */
static int check_sinusoidal(const posenc_sinusoidal_args* a, posenc_error* e) {
  int64_t tokens, d;
  CHECK(check_view(e, "out", a->out, 2, KIND_F32));
  tokens = a->out->shape[0];
  d = a->out->shape[1];
  if (d < 2 || d % 2) return posenc_reject(e, "out.shape[1]", d, "model dim must be even and >= 2");
  if (!(isfinite(a->base) && a->base > 0))
    return posenc_reject(e, "base", a->base, "must be finite and > 0");
  if (a->x) {
    CHECK(check_view(e, "x", a->x, 2, KIND_F32));
    CHECK(check_dim(e, "x", a->x, 0, tokens));
    CHECK(check_dim(e, "x", a->x, 1, d));
  }
  if (a->positions) {
    CHECK(check_view(e, "positions", a->positions, 1, KIND_INDEX));
    CHECK(check_dim(e, "positions", a->positions, 0, tokens));
    CHECK(check_positions(e, "positions", a->positions, 0, kMaxPosition));
  } else if (tokens - 1 > kMaxPosition) {
    return posenc_reject(e, "out.shape[0]", tokens, "table rows must be <= 2^24 + 1");
  }
  CHECK(check_no_self_overlap(e, "out", a->out));
  if (a->x) CHECK(check_no_overlap(e, "out", a->out, "x", a->x, 1));
  if (a->positions) CHECK(check_no_overlap(e, "out", a->out, "positions", a->positions, 0));
  return POSENC_OK;
}

static int sinusoidal(const posenc_sinusoidal_args* a, posenc_error* e) {
  const DLTensor *out = a->out, *x = a->x;
  int64_t t, i, d;
  angle_t* omega;
  CHECK(check_sinusoidal(a, e));
  d = out->shape[1];
  omega = malloc(sizeof *omega * (d / 2));
  if (!omega) {
    snprintf(e->message, sizeof e->message, "out of memory");
    return POSENC_FAILED;
  }
  frequencies(omega, d, a->base, 1.0);
  for (t = 0; t < out->shape[0]; ++t) {
    const angle_t p = (angle_t)(a->positions ? load_index(a->positions, t) : t);
    float* y = f32_ptr(out) + t * stride_of(out, 0);
    const float* xt = x ? f32_ptr(x) + t * stride_of(x, 0) : NULL;
    for (i = 0; i < d / 2; ++i) {
      const angle_t theta = p * omega[i];
      const double x_sin = xt ? xt[2 * i * stride_of(x, 1)] : 0.0;
      const double x_cos = xt ? xt[(2 * i + 1) * stride_of(x, 1)] : 0.0;
      y[2 * i * stride_of(out, 1)] = (float)(x_sin + sin(theta));
      y[(2 * i + 1) * stride_of(out, 1)] = (float)(x_cos + cos(theta));
    }
  }
  free(omega);
  return POSENC_OK;
}

/* ---- the table ---- */

#ifndef ROPE_SCALINGS
#define ROPE_SCALINGS \
  (POSENC_VARIANT_SCALING(POSENC_SCALING_NONE) | POSENC_VARIANT_SCALING(POSENC_SCALING_LINEAR))
#endif

#define COMMON (POSENC_VARIANT_F32 | POSENC_VARIANT_STRIDED | POSENC_VARIANT_IN_PLACE)

static const posenc_kernel kKernels[] = {
    {.name = KERNEL_NAME,
     .family = POSENC_FAMILY_ROPE,
     .variants = COMMON | POSENC_VARIANT_ROPE_HALF_SPLIT | POSENC_VARIANT_ROPE_INTERLEAVED |
                 POSENC_VARIANT_ROPE_PARTIAL | POSENC_VARIANT_ROPE_INVERSE |
                 POSENC_VARIANT_ROPE_KEY | ROPE_SCALINGS,
     .bound = 1,
     .run.rope = rope},
    {.name = KERNEL_NAME,
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = COMMON | POSENC_VARIANT_SINUSOIDAL_ADD | POSENC_VARIANT_SINUSOIDAL_POSITIONS,
     .bound = 1,
     .run.sinusoidal = sinusoidal},
};

static const posenc_plugin kPlugin = {POSENC_PLUGIN_ABI_VERSION,
                                      sizeof kKernels / sizeof kKernels[0], kKernels};

POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &kPlugin; }
