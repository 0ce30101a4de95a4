// Variant bits: every call's required_variants() is asked before validation, so it must be defined
// for any field values, valid or not.
#include <gtest/gtest.h>

#include "posenc/rope.h"
#include "posenc/rope_cache.h"
#include "posenc/rope_frequencies.h"

namespace posenc {
namespace {

TEST(Variants, ScalingBitsAreDistinctForKnownKinds) {
  uint64_t seen = 0;
  for (int k = 0; k <= static_cast<int>(RopeScalingKind::longrope); ++k) {
    const uint64_t bit = variant::scaling_bit(static_cast<RopeScalingKind>(k));
    EXPECT_EQ(__builtin_popcountll(bit), 1) << k;
    EXPECT_EQ(seen & bit, 0u) << k;
    seen |= bit;
  }
  EXPECT_EQ(seen, variant::all_scalings);
}

// Found by fuzz/rope_fuzz: an out-of-range kind shifted by 16 + kind (UBSan: shift exponent 75).
TEST(Variants, UnknownScalingKindHasNoBit) {
  for (int k : {7, 40, 75, 255}) {
    const auto kind = static_cast<RopeScalingKind>(k);
    EXPECT_EQ(variant::scaling_bit(kind), 0u) << k;
    RopeCacheCall call;
    call.scaling.kind = kind;
    EXPECT_EQ(call.required_variants() & variant::all_scalings, 0u) << k;
  }
}

}  // namespace
}  // namespace posenc
