/* Kernels that keep to conventions engines differ on, and declare them (plugin ABI version 3,
 * POSENC_CONVENTION_*): rotary embeddings on the fly, unscaled or YaRN, the way ggml's rope takes
 * them: YaRN's correction range always rounded (HF's truncate = true), finite inputs only, int32
 * positions only. It rejects anything else (truncate = 0, int64 positions, ±inf or NaN in q or k).
 *
 *   yarn_rounded            declares all three: posenc generates only inputs inside them, and it
 *                           passes with the profile's full case count.
 *   yarn_rejects_unrounded  the same function declaring finite inputs and int32 positions only:
 *                           posenc hands it truncate = 0 too, and reports once "rejected a
 *                           declared-supported input" with the shrunk input; its other properties
 *                           pass on the cases it accepted.
 *
 *   cc -O2 -shared -fPIC -I<posenc>/include rope_conventions.c -o librope_conventions.so -lm */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "posenc/plugin/rope.h"

static const double kPi = 3.14159265358979323846;

static float* f32_ptr(const DLTensor* t) { return (float*)element_ptr(t); }

/* YaRN's magnitude correction g(f, m) and the dim turning `rotations` times over L0. */
static double yarn_mscale(double f, double m) { return f <= 1 ? 1.0 : 0.1 * m * log(f) + 1.0; }
static double correction_dim(double rotations, int64_t d, double base, double original) {
  return (double)d * log(original / (rotations * 2 * kPi)) / (2 * log(base));
}

/* ω_i into omega (d/2 of them); returns the attention factor. */
static double frequencies(double* omega, int64_t d, double base, const posenc_rope_scaling* s) {
  double derived = 1.0;
  int64_t i;
  for (i = 0; i < d / 2; ++i) omega[i] = pow(base, -2.0 * (double)i / (double)d);
  if (s->kind == POSENC_SCALING_YARN) {
    const double original = (double)s->original_max_position;
    /* Always rounded: this kernel's convention. */
    double lo = floor(correction_dim(s->beta_fast, d, base, original));
    double hi = ceil(correction_dim(s->beta_slow, d, base, original));
    if (lo < 0) lo = 0;
    if (hi > (double)(d - 1)) hi = (double)(d - 1);
    if (lo == hi) hi += 0.001;
    for (i = 0; i < d / 2; ++i) {
      double ramp = ((double)i - lo) / (hi - lo);
      ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
      omega[i] = omega[i] / s->factor * ramp + omega[i] * (1 - ramp);
    }
    derived = s->mscale != 0 && s->mscale_all_dim != 0
                  ? yarn_mscale(s->factor, s->mscale) / yarn_mscale(s->factor, s->mscale_all_dim)
                  : yarn_mscale(s->factor, 1);
  }
  return isnan(s->attention_factor) ? derived : s->attention_factor;
}

static int check_scaling(posenc_error* e, const posenc_rope_scaling* s, int64_t d, double base) {
  if (!(isfinite(base) && base >= 1)) return posenc_reject(e, "base", base, "must be >= 1");
  if (!(isnan(s->attention_factor) || (isfinite(s->attention_factor) && s->attention_factor > 0)))
    return posenc_reject(e, "scaling.attention_factor", s->attention_factor,
                         "must be finite and > 0, or NaN (derived)");
  if (s->kind == POSENC_SCALING_NONE) return POSENC_OK;
  if (s->kind != POSENC_SCALING_YARN)
    return posenc_reject(e, "scaling.kind", s->kind, "this kernel implements none and yarn");
  if (!(isfinite(s->factor) && s->factor > 0))
    return posenc_reject(e, "scaling.factor", s->factor, "must be finite and > 0");
  if (base == 1) return posenc_reject(e, "base", base, "yarn divides by ln(base)");
  if (s->original_max_position < 1)
    return posenc_reject(e, "scaling.original_max_position", (double)s->original_max_position,
                         "must be >= 1");
  if (!(isfinite(s->beta_slow) && s->beta_slow > 0))
    return posenc_reject(e, "scaling.beta_slow", s->beta_slow, "must be finite and > 0");
  if (!(isfinite(s->beta_fast) && s->beta_fast > s->beta_slow))
    return posenc_reject(e, "scaling.beta_fast", s->beta_fast, "must be finite and > beta_slow");
  (void)d;
  return POSENC_OK;
}

/* The first ±inf or NaN of a [tokens, heads, head_dim] view, rejected. */
static int check_finite(posenc_error* e, const char* name, const DLTensor* t) {
  int64_t a, h, j;
  char argument[64];
  for (a = 0; a < t->shape[0]; ++a)
    for (h = 0; h < t->shape[1]; ++h)
      for (j = 0; j < t->shape[2]; ++j) {
        const float x = f32_ptr(t)[a * stride_of(t, 0) + h * stride_of(t, 1) + j * stride_of(t, 2)];
        if (isfinite(x)) continue;
        snprintf(argument, sizeof argument, "%s[%lld, %lld, %lld]", name, (long long)a,
                 (long long)h, (long long)j);
        return posenc_reject(e, argument, x, "this kernel takes finite inputs only");
      }
  return POSENC_OK;
}

/* posenc's RopeCall::validate, in the same order; then the conventions it keeps to. */
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
  CHECK(check_scaling(e, &a->scaling, a->rotary_dim, a->base));
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
  /* The conventions: ggml's rounded YaRN range, int32 positions, finite values. */
  if (a->scaling.kind == POSENC_SCALING_YARN && !a->scaling.truncate)
    return posenc_reject(e, "scaling.truncate", a->scaling.truncate,
                         "must be 1: this kernel always rounds YaRN's correction range");
  if (a->positions->dtype.bits != 32)
    return posenc_reject_text(e, "positions", dtype_name(a->positions->dtype), "must be i32");
  CHECK(check_finite(e, "q", a->q));
  if (a->k) CHECK(check_finite(e, "k", a->k));
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
  const int interleaved = a->layout == POSENC_LAYOUT_INTERLEAVED;
  double *omega, *c, *s, factor;
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
  factor = frequencies(omega, a->rotary_dim, a->base, &a->scaling);
  for (t = 0; t < a->q->shape[0]; ++t) {
    const double p = (double)load_index(a->positions, t);
    for (i = 0; i < half; ++i) {
      const double theta = a->inverse ? -(p * omega[i]) : p * omega[i];
      c[i] = factor * cos(theta);
      s[i] = factor * sin(theta);
    }
    rotate_token(a->q, a->q_out, t, c, s, a->rotary_dim, interleaved);
    if (a->k) rotate_token(a->k, a->k_out, t, c, s, a->rotary_dim, interleaved);
  }
  free(omega), free(c), free(s);
  return POSENC_OK;
}

#define VARIANTS                                                                         \
  (POSENC_VARIANT_F32 | POSENC_VARIANT_STRIDED | POSENC_VARIANT_IN_PLACE |               \
   POSENC_VARIANT_ROPE_HALF_SPLIT | POSENC_VARIANT_ROPE_INTERLEAVED |                    \
   POSENC_VARIANT_ROPE_PARTIAL | POSENC_VARIANT_ROPE_INVERSE | POSENC_VARIANT_ROPE_KEY | \
   POSENC_VARIANT_SCALING(POSENC_SCALING_NONE) | POSENC_VARIANT_SCALING(POSENC_SCALING_YARN))

static const posenc_kernel kKernels[] = {
    {.name = "yarn_rounded",
     .family = POSENC_FAMILY_ROPE,
     .variants = VARIANTS,
     .bound = 1,
     .run.rope = rope,
     .conventions = POSENC_CONVENTION_YARN_TRUNCATE_ONLY | POSENC_CONVENTION_FINITE_INPUTS |
                    POSENC_CONVENTION_POSITIONS_I32},
    {.name = "yarn_rejects_unrounded",
     .family = POSENC_FAMILY_ROPE,
     .variants = VARIANTS,
     .bound = 1,
     .run.rope = rope,
     .conventions = POSENC_CONVENTION_FINITE_INPUTS | POSENC_CONVENTION_POSITIONS_I32},
};

static const posenc_plugin kPlugin = {POSENC_PLUGIN_ABI_VERSION,
                                      sizeof kKernels / sizeof kKernels[0], kKernels};

POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &kPlugin; }
