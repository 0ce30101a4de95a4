// libFuzzer target for vision_rope: see fuzz/fuzz.h and fuzz/decode.h.
#include "fuzz/fuzz.h"

POSENC_FUZZ_TARGET(VisionRopeCall)
