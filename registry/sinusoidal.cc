// Every sinusoidal implementation, reference first.
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<SinusoidalCall>>& implementations<SinusoidalCall>() {
  static const std::vector<Impl<SinusoidalCall>> table = {
      {.name = "sinusoidal/reference",
       .variants = kAllVariants,
       .bound = 0,
       .run = reference::sinusoidal},
  };
  return table;
}

}  // namespace posenc
