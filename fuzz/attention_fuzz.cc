// libFuzzer target for attention: see fuzz/fuzz.h and properties/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(AttentionCall)
