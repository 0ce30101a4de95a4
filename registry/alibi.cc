// Every alibi implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<AlibiCall>>& implementations<AlibiCall>() {
  static const std::vector<Impl<AlibiCall>> table = [] {
    std::vector<Impl<AlibiCall>> impls = {
        {.name = "alibi/reference", .variants = kAllVariants, .bound = 0, .run = reference::alibi},
    };
    for (auto& impl : optimized::alibi()) impls.push_back(std::move(impl));
    return impls;
  }();
  return table;
}

}  // namespace posenc
