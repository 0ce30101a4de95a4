// Every attention implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<AttentionCall>>& implementations<AttentionCall>() {
  static const std::vector<Impl<AttentionCall>> table = [] {
    std::vector<Impl<AttentionCall>> impls = {
        {.name = "attention/reference",
         .variants = kAllVariants,
         .bound = 0,
         .run = reference::attention},
    };
    for (auto& impl : optimized::attention()) impls.push_back(std::move(impl));
    return impls;
  }();
  return table;
}

}  // namespace posenc
