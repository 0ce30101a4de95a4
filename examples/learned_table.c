#include <posenc/plugin/absolute.h>

/* out[t, c] = x[t, c] + table[positions[t], c]: a learned position table (posenc/absolute.h). */
static int64_t position(const DLTensor* p, int64_t t) {
  const char* data = (const char*)p->data + p->byte_offset;
  return p->dtype.bits == 64 ? ((const int64_t*)data)[t * p->strides[0]]
                             : ((const int32_t*)data)[t * p->strides[0]];
}

static int learned(const posenc_absolute_args* a, posenc_error* error) {
  const DLTensor *x = a->x, *table = a->table, *out = a->out;
  for (int64_t t = 0; t < out->shape[0]; ++t) { /* reject bad input before any write */
    const int64_t p = position(a->positions, t);
    char name[32];
    snprintf(name, sizeof name, "positions[%lld]", (long long)t);
    if (p < 0 || p >= table->shape[0]) return posenc_reject(error, name, p, "no such row");
  }
  for (int64_t t = 0; t < out->shape[0]; ++t) {
    const int64_t p = position(a->positions, t);
    for (int64_t c = 0; c < out->shape[1]; ++c)
      ((float*)out->data)[t * out->strides[0] + c * out->strides[1]] =
          ((const float*)x->data)[t * x->strides[0] + c * x->strides[1]] +
          ((const float*)table->data)[p * table->strides[0] + c * table->strides[1]];
  }
  return POSENC_OK;
}

static const posenc_kernel kernels[] = {
    {.name = "learned",
     .family = POSENC_FAMILY_ABSOLUTE,
     .variants = POSENC_VARIANT_F32 | POSENC_VARIANT_STRIDED | POSENC_VARIANT_IN_PLACE,
     .bound = 0,
     .run.absolute = learned}};
static const posenc_plugin plugin = {POSENC_PLUGIN_ABI_VERSION, 1, kernels};
POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) { return &plugin; }
