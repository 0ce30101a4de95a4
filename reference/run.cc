// posenc::reference::run (posenc/run.h): each family's reference kernel under the one name.
#include "posenc/run.h"

#include "reference/reference.h"

namespace posenc::reference {

#define POSENC_FAMILY(name, Call, NAME) \
  void run(const Call& call) { name(call); }
#include "posenc/families.inc"

}  // namespace posenc::reference
