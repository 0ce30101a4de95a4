#include "optimized/targets.h"

namespace posenc::optimized {

bool cpu_supports(int64_t target) {
  // The emulated fallbacks run anywhere; SupportedTargets() runs CPUID, so ask once.
  static const int64_t supported = hwy::SupportedTargets() | HWY_EMU128 | HWY_SCALAR;
  return (supported & target) != 0;
}

}  // namespace posenc::optimized
