// libFuzzer target for rope_cache: see fuzz/fuzz.h and fuzz/decode.h.
// CI (fuzz/CMakeLists.txt reads this line): runs=16000 selfcheck_runs=50000
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(RopeCacheCall)
