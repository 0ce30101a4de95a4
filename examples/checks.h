/* Argument checks for plugin kernels, in C99: what posenc's contract checks (contract/tensor.cc),
 * with the same argument names, so that a kernel rejects bad input the way posenc's bad-input
 * checks expect. Each check returns POSENC_OK or fills *e and returns POSENC_INVALID_ARGUMENT.
 * Copy it into your own kernel library; it needs only posenc/plugin.h. */
#ifndef POSENC_EXAMPLE_CHECKS_H_
#define POSENC_EXAMPLE_CHECKS_H_

#include <stdint.h>
#include <stdio.h>

#include "posenc/plugin.h"

#define CHECK(expr)                          \
  do {                                       \
    int check_status_ = (expr);              \
    if (check_status_) return check_status_; \
  } while (0)

static const int64_t kMaxPosition = (int64_t)1 << 24; /* positions lie in [0, 2^24] */

enum { KIND_F32, KIND_INDEX }; /* f32 data; or int64/int32 positions */

/* Stride of dim d in elements; DLPack allows NULL strides for a compact row-major view. */
static int64_t stride_of(const DLTensor* t, int d) {
  int64_t s = 1;
  int k;
  if (t->strides) return t->strides[d];
  for (k = t->ndim - 1; k > d; --k) s *= t->shape[k];
  return s;
}

static char* element_ptr(const DLTensor* t) { return (char*)t->data + t->byte_offset; }

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  int d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static const char* dtype_name(DLDataType t) {
  if (t.lanes != 1) return "vector";
  if (t.code == kDLFloat)
    return t.bits == 32 ? "f32" : t.bits == 64 ? "f64" : t.bits == 16 ? "f16" : "float";
  if (t.code == kDLBfloat) return "bf16";
  if (t.code == kDLInt) return t.bits == 64 ? "i64" : t.bits == 32 ? "i32" : "int";
  return "other";
}

static int reject_named(posenc_error* e, const char* name, const char* field, double value,
                        const char* requirement) {
  char argument[64];
  snprintf(argument, sizeof argument, "%s%s", name, field);
  return posenc_reject(e, argument, value, requirement);
}

/* Rank, dtype, shape and strides >= 0, an extent that fits in int64 bytes, data when non-empty. */
static int check_view(posenc_error* e, const char* name, const DLTensor* t, int ndim, int kind) {
  int d;
  int64_t n = 1, last = 0, step;
  char field[32], requirement[32];
  const int bits = t->dtype.bits;
  const int ok_dtype = t->dtype.lanes == 1 &&
                       (kind == KIND_F32 ? t->dtype.code == kDLFloat && bits == 32
                                         : t->dtype.code == kDLInt && (bits == 64 || bits == 32));
  if (t->ndim != ndim) {
    snprintf(requirement, sizeof requirement, "must be %d", ndim);
    return reject_named(e, name, ".rank", t->ndim, requirement);
  }
  if (!ok_dtype) {
    char argument[64];
    snprintf(argument, sizeof argument, "%s.dtype", name);
    return posenc_reject_text(e, argument, dtype_name(t->dtype),
                              kind == KIND_F32 ? "must be f32" : "must be i64 or i32");
  }
  for (d = 0; d < ndim; ++d) {
    snprintf(field, sizeof field, ".shape[%d]", d);
    if (t->shape[d] < 0) return reject_named(e, name, field, t->shape[d], "must be >= 0");
    snprintf(field, sizeof field, ".strides[%d]", d);
    if (stride_of(t, d) < 0) return reject_named(e, name, field, stride_of(t, d), "must be >= 0");
    if (__builtin_mul_overflow(n, t->shape[d], &n))
      return reject_named(e, name, ".shape", t->shape[d], "size overflows int64");
  }
  if (n == 0) return POSENC_OK;
  for (d = 0; d < ndim; ++d) {
    if (__builtin_mul_overflow(t->shape[d] - 1, stride_of(t, d), &step) ||
        __builtin_add_overflow(last, step, &last))
      return reject_named(e, name, ".strides", stride_of(t, d), "extent overflows int64");
  }
  if (__builtin_mul_overflow(last + 1, (int64_t)(bits / 8), &step))
    return reject_named(e, name, ".strides", last, "extent overflows int64");
  if (t->data == NULL)
    return reject_named(e, name, ".data", 0, "must point to memory for a non-empty view");
  return POSENC_OK;
}

static int check_dim(posenc_error* e, const char* name, const DLTensor* t, int d,
                     int64_t expected) {
  char field[32], requirement[48];
  if (t->shape[d] == expected) return POSENC_OK;
  snprintf(field, sizeof field, ".shape[%d]", d);
  snprintf(requirement, sizeof requirement, "must be %lld", (long long)expected);
  return reject_named(e, name, field, t->shape[d], requirement);
}

static int64_t load_index(const DLTensor* t, int64_t i) {
  const char* p = element_ptr(t);
  return t->dtype.bits == 64 ? ((const int64_t*)p)[i * stride_of(t, 0)]
                             : ((const int32_t*)p)[i * stride_of(t, 0)];
}

/* Every index of a 1-d index view in [lo, hi]. */
static int check_positions(posenc_error* e, const char* name, const DLTensor* t, int64_t lo,
                           int64_t hi) {
  int64_t i;
  char argument[64], requirement[64];
  for (i = 0; i < t->shape[0]; ++i) {
    const int64_t p = load_index(t, i);
    if (p >= lo && p <= hi) continue;
    snprintf(argument, sizeof argument, "%s[%lld]", name, (long long)i);
    snprintf(requirement, sizeof requirement, "must lie in [%lld, %lld]", (long long)lo,
             (long long)hi);
    return posenc_reject(e, argument, (double)p, requirement);
  }
  return POSENC_OK;
}

/* No two indices of an output share an element. */
static int check_no_self_overlap(posenc_error* e, const char* name, const DLTensor* t) {
  int dims[8], n = 0, i, j;
  int64_t extent = 1;
  char field[32];
  if (numel(t) == 0) return POSENC_OK;
  for (i = 0; i < t->ndim && i < 8; ++i)
    if (t->shape[i] > 1) dims[n++] = i;
  for (i = 1; i < n; ++i) /* insertion sort by stride */
    for (j = i; j > 0 && stride_of(t, dims[j]) < stride_of(t, dims[j - 1]); --j) {
      const int swap = dims[j];
      dims[j] = dims[j - 1];
      dims[j - 1] = swap;
    }
  for (i = 0; i < n; ++i) {
    const int64_t s = stride_of(t, dims[i]);
    if (s < extent) {
      snprintf(field, sizeof field, ".strides[%d]", dims[i]);
      return reject_named(e, name, field, s, "makes two output elements share memory");
    }
    extent = s * (t->shape[dims[i]] - 1) + extent;
  }
  return POSENC_OK;
}

static int same_view(const DLTensor* a, const DLTensor* b) {
  int d;
  if (element_ptr(a) != element_ptr(b) || a->ndim != b->ndim || a->dtype.code != b->dtype.code ||
      a->dtype.bits != b->dtype.bits)
    return 0;
  for (d = 0; d < a->ndim; ++d)
    if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && stride_of(a, d) != stride_of(b, d)))
      return 0;
  return 1;
}

/* The bytes a view covers, as rows of its largest stride: each element lies at
 * lo + r * row + u with u < inner. */
typedef struct {
  uintptr_t lo, hi;
  int64_t row, inner;
} footprint;

static footprint footprint_of(const DLTensor* t) {
  const int64_t size = t->dtype.bits / 8;
  int64_t last = 0, inner_last = 0;
  int d, outer = -1;
  footprint f;
  for (d = 0; d < t->ndim; ++d) {
    last += (t->shape[d] - 1) * stride_of(t, d);
    if (t->shape[d] > 1 && (outer < 0 || stride_of(t, d) > stride_of(t, outer))) outer = d;
  }
  f.lo = (uintptr_t)element_ptr(t);
  f.hi = f.lo + (uintptr_t)((last + 1) * size);
  f.row = 0;
  f.inner = 0;
  if (outer < 0) return f;
  for (d = 0; d < t->ndim; ++d)
    if (d != outer) inner_last += (t->shape[d] - 1) * stride_of(t, d);
  f.row = stride_of(t, outer) * size;
  f.inner = (inner_last + 1) * size;
  return f;
}

/* An output shares no byte with an input, unless `allow_identical` and they are the same view.
 * Views packed row by row in one buffer (q, k, v per token) are disjoint when their in-row byte
 * intervals miss each other. */
static int check_no_overlap(posenc_error* e, const char* out_name, const DLTensor* out,
                            const char* in_name, const DLTensor* in, int allow_identical) {
  footprint a, b;
  int disjoint;
  char requirement[96];
  if (numel(out) == 0 || numel(in) == 0) return POSENC_OK;
  if (allow_identical && same_view(out, in)) return POSENC_OK;
  a = footprint_of(out);
  b = footprint_of(in);
  disjoint = a.hi <= b.lo || b.hi <= a.lo;
  if (!disjoint && a.row > 0 && a.row == b.row && a.inner <= a.row && b.inner <= b.row) {
    const int64_t diff = (int64_t)(b.lo - a.lo);
    const int64_t shift = (diff % a.row + a.row) % a.row;
    disjoint = shift >= a.inner && shift + b.inner <= a.row;
  }
  if (disjoint) return POSENC_OK;
  snprintf(requirement, sizeof requirement, "overlaps %s%s", in_name,
           allow_identical ? " without being the same view" : "");
  return reject_named(e, out_name, ".data", (double)a.lo, requirement);
}

#endif /* POSENC_EXAMPLE_CHECKS_H_ */
