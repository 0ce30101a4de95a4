/* A rope kernel written for one model: Llama 3.1 8B's frequencies (rope_theta 500000, rope_type
 * llama3 with factor 8, low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings
 * 8192) are hard-coded, and the call's base and scaling are accepted but ignored, as in a kernel
 * specialised for the model it ships with. It is right for that model and wrong for every other:
 *
 *   posenc validate --kernel ./librope_kernels_llama3.so --config llama-3.1-8b.json  # passes
 *   posenc validate --kernel ./librope_kernels_llama3.so --config llama-3.2-1b.json  # fails:
 *     the same rope_type with factor 32
 *
 * (ctests validate.config_llama3_kernel_*). The rest is rope_kernels.c. */
#include <math.h>
#include <stdint.h>

#define KERNEL_NAME "llama3_8b"

/* Llama 3's wavelength bands: unscaled below original/high_freq_factor, divided by the factor
 * above original/low_freq_factor, blended linearly in 1/wavelength between. */
static void llama3_8b_frequencies(double* omega, int64_t d) {
  const double base = 500000, factor = 8, low = 1, high = 4, original = 8192;
  int64_t i;
  for (i = 0; i < d / 2; ++i) {
    const double w = pow(base, -2.0 * (double)i / (double)d);
    const double wavelength = 2 * 3.14159265358979323846 / w;
    if (wavelength < original / high) {
      omega[i] = w;
    } else if (wavelength > original / low) {
      omega[i] = w / factor;
    } else {
      const double smooth = (original / wavelength - low) / (high - low);
      omega[i] = (1 - smooth) * w / factor + smooth * w;
    }
  }
}

#define FIXED_FREQUENCIES llama3_8b_frequencies
#define ROPE_SCALINGS                                                                            \
  (POSENC_VARIANT_SCALING(POSENC_SCALING_NONE) | POSENC_VARIANT_SCALING(POSENC_SCALING_LINEAR) | \
   POSENC_VARIANT_SCALING(POSENC_SCALING_NTK) |                                                  \
   POSENC_VARIANT_SCALING(POSENC_SCALING_DYNAMIC_NTK) |                                          \
   POSENC_VARIANT_SCALING(POSENC_SCALING_YARN) | POSENC_VARIANT_SCALING(POSENC_SCALING_LLAMA3) | \
   POSENC_VARIANT_SCALING(POSENC_SCALING_LONGROPE))
#include "rope_kernels.c"
