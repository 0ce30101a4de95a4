// The t5 properties over every registered implementation (ctest label `property`).
#include "properties/suite.h"

namespace {
const bool registered = posenc::harness::register_properties<posenc::T5Call>("T5");
}  // namespace
