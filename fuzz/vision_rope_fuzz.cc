// libFuzzer target for vision_rope: see fuzz/fuzz.h and fuzz/decode.h.
// CI (fuzz/CMakeLists.txt reads this line): runs=4000 selfcheck_runs=20000
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(VisionRopeCall)
