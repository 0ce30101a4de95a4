// Every absolute implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<AbsoluteCall>>& implementations<AbsoluteCall>() {
  static const std::vector<Impl<AbsoluteCall>> table = [] {
    std::vector<Impl<AbsoluteCall>> impls = {
        {.name = "absolute/reference",
         .variants = kAllVariants,
         .bound = 0,
         .run = reference::absolute},
    };
    for (auto& impl : optimized::absolute()) impls.push_back(std::move(impl));
    return impls;
  }();
  return table;
}

}  // namespace posenc
