// libFuzzer target for t5: see fuzz/fuzz.h and fuzz/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(T5Call)
