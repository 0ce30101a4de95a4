// libFuzzer target for absolute: see fuzz/fuzz.h and properties/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(AbsoluteCall)
