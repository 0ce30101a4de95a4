// Every vision_rope implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<VisionRopeCall>>& implementations<VisionRopeCall>() {
  static const std::vector<Impl<VisionRopeCall>> table =
      reference_then<VisionRopeCall>({.name = "vision_rope/reference",
                                      .variants = kAllVariants,
                                      .bound = 0,
                                      .run = reference::vision_rope},
                                     optimized::vision_rope());
  return table;
}

}  // namespace posenc
