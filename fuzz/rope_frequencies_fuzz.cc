// libFuzzer target for rope_frequencies: see fuzz/fuzz.h and fuzz/decode.h.
// CI (fuzz/CMakeLists.txt reads this line): runs=60000 selfcheck_runs=2000
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(RopeFrequenciesCall)
