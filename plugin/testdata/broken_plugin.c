/* Test-only plugin libraries that must fail to load, one per BROKEN_* definition. */
#include <stdio.h>

#include "posenc/plugin/sinusoidal.h"

static int* volatile nowhere = (int*)16; /* a fault the compiler can't see coming */

static int kernel(const posenc_sinusoidal_args* a, posenc_error* e) {
  (void)a, (void)e;
  return POSENC_OK;
}

static posenc_kernel kKernels[2] = {
    {.name = "a",
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = ~(uint64_t)0,
     .run.sinusoidal = kernel},
    {.name = "b",
     .family = POSENC_FAMILY_SINUSOIDAL,
     .variants = ~(uint64_t)0,
     .run.sinusoidal = kernel},
};
static posenc_plugin kPlugin = {POSENC_PLUGIN_ABI_VERSION, 2, kKernels};

#if defined(BROKEN_CONSTRUCTOR_CRASH)
__attribute__((constructor)) static void crash_on_load(void) { *nowhere = 1; }
#endif

#if defined(BROKEN_NO_SYMBOL)
POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernel(void) { return &kPlugin; }
#else
POSENC_PLUGIN_EXPORT const posenc_plugin* posenc_plugin_kernels(void) {
#if defined(BROKEN_ABI)
  kPlugin.abi_version = 999;
#elif defined(BROKEN_NULL_TABLE)
  return NULL;
#elif defined(BROKEN_BAD_FAMILY)
  kKernels[1].family = 42;
#elif defined(BROKEN_NO_FUNCTION)
  kKernels[1].run.sinusoidal = NULL;
#elif defined(BROKEN_DUPLICATE)
  kKernels[1].name = "a";
#elif defined(BROKEN_BAD_NAME)
  kKernels[1].name = "has space";
#elif defined(BROKEN_CONVENTIONS)
  kKernels[1].conventions = POSENC_CONVENTION_POSITIONS_I32 | POSENC_CONVENTION_POSITIONS_I64;
#elif defined(BROKEN_CRASH)
  *nowhere = 1;
#elif defined(BROKEN_HANG)
  for (volatile int forever = 1; forever;) {
  }
#endif
  return &kPlugin;
}
#endif
