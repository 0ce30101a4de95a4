// Every t5 implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<T5Call>>& implementations<T5Call>() {
  static const std::vector<Impl<T5Call>> table = reference_then<T5Call>(
      {.name = "t5/reference", .variants = kAllVariants, .bound = 0, .run = reference::t5},
      optimized::t5());
  return table;
}

}  // namespace posenc
