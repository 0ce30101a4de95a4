// libFuzzer target for rope_frequencies: see fuzz/fuzz.h and fuzz/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(RopeFrequenciesCall)
