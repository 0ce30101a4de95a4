// libFuzzer target for alibi: see fuzz/fuzz.h and properties/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(AlibiCall)
