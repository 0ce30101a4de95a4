// Every sinusoidal implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<SinusoidalCall>>& implementations<SinusoidalCall>() {
  static const std::vector<Impl<SinusoidalCall>> table = [] {
    std::vector<Impl<SinusoidalCall>> impls = {
        {.name = "sinusoidal/reference",
         .variants = kAllVariants,
         .bound = 0,
         .run = reference::sinusoidal},
    };
    for (auto& impl : optimized::sinusoidal()) impls.push_back(std::move(impl));
    return impls;
  }();
  return table;
}

}  // namespace posenc
