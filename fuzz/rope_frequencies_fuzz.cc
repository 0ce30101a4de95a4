// libFuzzer target for rope_frequencies: see fuzz/fuzz.h and properties/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(RopeFrequenciesCall)
