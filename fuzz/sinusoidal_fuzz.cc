// libFuzzer target for sinusoidal: see fuzz/fuzz.h and properties/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(SinusoidalCall)
