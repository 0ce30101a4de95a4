// Every t5 implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<T5Call>>& implementations<T5Call>() {
  static const std::vector<Impl<T5Call>> table = [] {
    std::vector<Impl<T5Call>> impls = {
        {.name = "t5/reference", .variants = kAllVariants, .bound = 0, .run = reference::t5},
    };
    for (auto& impl : optimized::t5()) impls.push_back(std::move(impl));
    return impls;
  }();
  return table;
}

}  // namespace posenc
