// Every sinusoidal implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<SinusoidalCall>>& implementations<SinusoidalCall>() {
  static const std::vector<Impl<SinusoidalCall>> table =
      reference_then<SinusoidalCall>({.name = "sinusoidal/reference",
                                      .variants = kAllVariants,
                                      .bound = 0,
                                      .run = reference::sinusoidal},
                                     optimized::sinusoidal());
  return table;
}

}  // namespace posenc
