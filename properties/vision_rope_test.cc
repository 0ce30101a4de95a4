// The vision_rope properties over every registered implementation (ctest label `property`).
#include "properties/suite.h"

namespace {
const bool registered = posenc::harness::register_properties<posenc::VisionRopeCall>("VisionRope");
}  // namespace
