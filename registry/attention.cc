// Every attention implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<AttentionCall>>& implementations<AttentionCall>() {
  static const std::vector<Impl<AttentionCall>> table =
      reference_then<AttentionCall>({.name = "attention/reference",
                                     .variants = kAllVariants,
                                     .bound = 0,
                                     .run = reference::attention},
                                    optimized::attention());
  return table;
}

}  // namespace posenc
