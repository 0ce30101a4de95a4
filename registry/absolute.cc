// Every absolute implementation, reference first.
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<AbsoluteCall>>& implementations<AbsoluteCall>() {
  static const std::vector<Impl<AbsoluteCall>> table = {
      {.name = "absolute/reference",
       .variants = kAllVariants,
       .bound = 0,
       .run = reference::absolute},
  };
  return table;
}

}  // namespace posenc
