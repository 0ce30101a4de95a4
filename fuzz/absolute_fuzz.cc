// libFuzzer target for absolute: see fuzz/fuzz.h and fuzz/decode.h.
// CI (fuzz/CMakeLists.txt reads this line): runs=12000 selfcheck_runs=2000
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(AbsoluteCall)
