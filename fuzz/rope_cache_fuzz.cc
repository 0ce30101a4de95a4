// libFuzzer target for rope_cache: see fuzz/fuzz.h and fuzz/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(RopeCacheCall)
