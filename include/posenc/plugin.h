/* posenc plugin ABI, version 3: how a kernel in a user's shared library reaches posenc.
 *
 * The library exports one function, posenc_plugin_kernels(), which returns a table of kernels.
 * `posenc validate --kernel lib.so` loads it and holds every kernel to the same properties,
 * differential checks against the fp64 reference, bad-input checks, guard bytes and determinism
 * checks as posenc's own kernels. Every call runs in a child process with a time limit, on copies
 * of the tensors surrounded by poisoned bytes, so a crash, a hang or a stray write is reported with
 * the input that caused it.
 *
 * This header needs only the C99 library and DLPack (dlpack/dlpack.h, version 0.6). It is plain C,
 * usable from C++.
 *
 * Conventions, for every family:
 *  - The semantics, shapes and tolerance unit of family F are those of posenc's
 *    include/posenc/F.h; its argument struct, in posenc/plugin/F.h (include it for each family
 *    the library has kernels for), mirrors that header's Call struct field by field.
 *  - Tensors are DLTensors in CPU memory. Shapes and strides count elements; posenc always sets
 *    strides (views may be padded, permuted or sliced) and passes byte_offset 0 (add it anyway,
 *    as engines may not). Float tensors are f32, or bf16 ({kDLBfloat, 16, 1}) and f16
 *    ({kDLFloat, 16, 1}) where the family's header allows them (activations and outputs, one dtype
 *    per call; rope caches f32 or bf16), and only for a kernel that declares POSENC_VARIANT_BF16
 *    or POSENC_VARIANT_F16; such outputs are held to the kernel's bound_bf16 or bound_f16, by
 *    default 1 ulp of their dtype (posenc/kernel.h).
 *    Positions are int64 or int32. An absent optional tensor is NULL. An output may be the very
 *    same view as its input (in place) where the family allows it, and is otherwise disjoint from
 *    every input.
 *  - posenc calls a kernel only with the variants it declares in its entry, except in bad-input
 *    checks. Bad input must be rejected before any output byte is written: fill *error naming
 *    the argument as posenc's contract does (the field name, "positions[3]", "q.shape[2]",
 *    "scaling.factor") and return POSENC_INVALID_ARGUMENT. posenc_reject() below does both.
 *  - A kernel must be deterministic: bitwise-identical output for equal inputs and for every
 *    `threads` value (0 means the kernel's own default).
 *  - A kernel may be called from any thread, many times in one process or in a fresh one; it must
 *    not rely on state left by an earlier call.
 */
#ifndef POSENC_PLUGIN_H_
#define POSENC_PLUGIN_H_

#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change to a struct or a meaning below. posenc loads its own version and versions
 * 1 and 2, each with the meaning it had (see posenc_kernel's version-2 and -3 fields, and
 * posenc_attention_args's version-3 fields; a kernel never sees the variants of a later version,
 * which it cannot declare: posenc clears those bits of an older table's entries, and a version-1
 * attention kernel gets version 1's struct); any other gets a "rebuild against this posenc" error.
 * 2: per-dtype bounds and max_position; attention's window_left and softcap.
 * 3: declared conventions (posenc_kernel.conventions); attention's lse output, chunk_size, sinks
 *    and alibi_slopes (appended to posenc_attention_args). */
#define POSENC_PLUGIN_ABI_VERSION 3u

/* The one symbol posenc looks up in the library. */
#define POSENC_PLUGIN_SYMBOL "posenc_plugin_kernels"

#if defined(_WIN32)
#define POSENC_PLUGIN_EXPORT __declspec(dllexport)
#else
#define POSENC_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Families: POSENC_FAMILY_<NAME> numbered from 0 in posenc/families.inc's order
 * (posenc::Family's), POSENC_FAMILY_COUNT of them ---- */
enum {
#define POSENC_FAMILY(name, Call, NAME) POSENC_FAMILY_##NAME,
#include "posenc/families.inc"
  POSENC_FAMILY_COUNT
};

/* ---- Variant bits (the values of posenc::variant) ----
 * A kernel declares every variant it handles. Bits up to 1 << 7 mean the same in every family;
 * from 1 << 8 up each family has its own (posenc/plugin/<family>.h). posenc runs a problem on a
 * kernel only when the kernel declares every bit the problem needs. */
#define POSENC_VARIANT_F32 ((uint64_t)1 << 0)
#define POSENC_VARIANT_BF16 ((uint64_t)1 << 1)
#define POSENC_VARIANT_F16 ((uint64_t)1 << 2)
#define POSENC_VARIANT_STRIDED ((uint64_t)1 << 3)  /* a view that is not row-major contiguous */
#define POSENC_VARIANT_IN_PLACE ((uint64_t)1 << 4) /* an output is the same view as its input */

/* Scaling kinds of the rope families (posenc::RopeScalingKind), and their variant bits: a rope,
 * rope_cache or rope_frequencies kernel declares each scaling it implements (on-the-fly rope
 * only; a cached call carries its scaling in the cache). */
enum {
  POSENC_SCALING_NONE = 0,
  POSENC_SCALING_LINEAR = 1,
  POSENC_SCALING_NTK = 2,
  POSENC_SCALING_DYNAMIC_NTK = 3,
  POSENC_SCALING_YARN = 4,
  POSENC_SCALING_LLAMA3 = 5,
  POSENC_SCALING_LONGROPE = 6,
};
#define POSENC_VARIANT_SCALING(kind) ((uint64_t)1 << (24 + (kind)))

/* ---- Conventions (version 3) ----
 * Where engines legitimately differ, a kernel may restrict the inputs it accepts. posenc then
 * generates only inputs inside them, never calls the kernel outside them (except in bad-input
 * checks), and says so in its report. A kernel that rejects an input inside what it declares is
 * reported once, as "rejected a declared-supported input", with the input shrunk and its message.
 * Declare none to be held to every input (version 1 and 2 kernels declare none). */
/* YaRN's correction range always rounded (HF's truncate = true only; ggml) */
#define POSENC_CONVENTION_YARN_TRUNCATE_ONLY (1u << 0)
#define POSENC_CONVENTION_FINITE_INPUTS (1u << 1) /* no ±inf or NaN in any float input */
#define POSENC_CONVENTION_POSITIONS_I32 (1u << 2) /* int32 positions only */
#define POSENC_CONVENTION_POSITIONS_I64 (1u << 3) /* int64 positions only (not with _I32) */

/* ---- Errors ---- */
enum {
  POSENC_OK = 0,
  POSENC_INVALID_ARGUMENT = 1, /* bad input, rejected before writing any output byte */
  POSENC_FAILED = 2,           /* anything else; message says what */
};

typedef struct posenc_error {
  char argument[64]; /* "positions[3]" */
  char value[64];    /* "1024" */
  char message[256]; /* the requirement broken, "must lie in [0, 1023]", or what failed */
} posenc_error;

/* Fill *error and return POSENC_INVALID_ARGUMENT:
 *   if (d % 2) return posenc_reject(error, "rotary_dim", d, "must be even");
 *   return posenc_reject_text(error, "q.dtype", "f64", "must be f32"); */
static inline int posenc_reject_text(posenc_error* error, const char* argument, const char* value,
                                     const char* requirement) {
  snprintf(error->argument, sizeof error->argument, "%s", argument);
  snprintf(error->value, sizeof error->value, "%s", value);
  snprintf(error->message, sizeof error->message, "%s", requirement);
  return POSENC_INVALID_ARGUMENT;
}
static inline int posenc_reject(posenc_error* error, const char* argument, double value,
                                const char* requirement) {
  char text[32];
  snprintf(text, sizeof text, "%.17g", value);
  return posenc_reject_text(error, argument, text, requirement);
}

/* ---- Arguments, one struct per family (posenc::<Family>Call) ----
 * Each is defined, with the family's variant bits and constants, in posenc/plugin/<family>.h:
 * a library includes the headers of the families it has kernels for. Booleans are int32_t 0 or
 * 1. `threads` is the requested thread count, 0 for the default. */
#define POSENC_FAMILY(name, Call, NAME) typedef struct posenc_##name##_args posenc_##name##_args;
#include "posenc/families.inc"

/* Shared by the rope families (rope_frequencies, rope_cache, rope, mrope). */

/* posenc::RopeScaling: each kind reads only its own fields (see rope_frequencies.h). */
typedef struct posenc_rope_scaling {
  int32_t kind; /* POSENC_SCALING_* */
  double factor;
  double alpha;
  int64_t max_position;
  int64_t original_max_position;
  int64_t seq_len;
  double beta_fast, beta_slow;
  double mscale, mscale_all_dim; /* 0 means unset */
  int32_t truncate;
  double low_freq_factor, high_freq_factor;
  const double* short_factor; /* longrope: short_factor_size (= rotary_dim/2) entries */
  int64_t short_factor_size;
  const double* long_factor;
  int64_t long_factor_size;
  double attention_factor; /* NaN means derived from the kind */
} posenc_rope_scaling;

/* Pair layouts of the rope-shaped families (posenc::RopeLayout). */
enum { POSENC_LAYOUT_HALF_SPLIT = 0, POSENC_LAYOUT_INTERLEAVED = 1 };

/* ---- The kernel table ---- */

/* Each kernel returns POSENC_OK, or an error code with *error filled: for family F,
 * typedef int (*posenc_F_fn)(const posenc_F_args*, posenc_error*). */
#define POSENC_FAMILY(name, Call, NAME) \
  typedef int (*posenc_##name##_fn)(const posenc_##name##_args*, posenc_error*);
#include "posenc/families.inc"

#define POSENC_KERNEL_THREADED 1u /* flags: honours `threads` */

typedef struct posenc_kernel {
  const char* name; /* letters, digits and _ . -; unique among the library's kernels of a family */
  uint32_t family;  /* POSENC_FAMILY_* */
  uint32_t flags;   /* POSENC_KERNEL_* */
  uint64_t variants;
  double bound; /* stated accuracy for f32 outputs in the family's tolerance unit; 0: bit-exact */
  union {       /* the member named after `family`: run.rope for POSENC_FAMILY_ROPE, ... */
#define POSENC_FAMILY(name, Call, NAME) posenc_##name##_fn name;
#include "posenc/families.inc"
  } run;

  /* Version 2: the accuracy envelope. A version-1 table has none of these fields (its entries are
   * shorter); posenc still loads it, with the meaning version 1 gave it: `bound` for f32 outputs,
   * 1 ulp of the dtype for bf16 and f16 outputs when `bound` > 0 (else bit-exact), no position
   * claim. */
  double bound_bf16;    /* bf16 outputs, in bf16 units of the family's tolerance unit; 0: as v1 */
  double bound_f16;     /* f16 outputs, in f16 units; 0: as version 1 */
  int64_t max_position; /* the largest position it claims to support; 0: no claim */

  /* Version 3: the conventions it keeps to, POSENC_CONVENTION_* (0: none, every input). A version
   * 1 or 2 table has no such field; posenc reads its entries as declaring none. */
  uint32_t conventions;
} posenc_kernel;

typedef struct posenc_plugin {
  uint32_t abi_version; /* POSENC_PLUGIN_ABI_VERSION; stays the first member in every version */
  uint32_t count;
  const posenc_kernel* kernels;
} posenc_plugin;

/* What the library defines and exports. The table must outlive the library's use. */
POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_PLUGIN_H_ */
