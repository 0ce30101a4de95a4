// libFuzzer target for rope: see fuzz/fuzz.h and fuzz/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(RopeCall)
