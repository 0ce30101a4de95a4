// Variant bits: every call's required_variants() is asked before validation, so it must be defined
// for any field values, valid or not.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "posenc/families.h"
#include "posenc/registry.h"

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

// Each family names its own bits once (variant_table): one bit each, above the shared ones, no
// bit or name twice, each name the family's own or a scaling's.
TEST(Variants, EveryFamilyNamesItsBitsOnce) {
  for_each_family([]<class Call>(std::type_identity<Call>) {
    const std::string family = family_name(Call::kFamily);
    uint64_t seen = 0;
    std::set<std::string> names;
    for (const VariantName& row : Call::variant_table()) {
      const std::string name = row.name;
      EXPECT_EQ(__builtin_popcountll(row.bit), 1) << family << " " << name;
      EXPECT_GE(row.bit, variant::kFamilyVariant0) << family << " " << name;
      EXPECT_EQ(seen & row.bit, 0u) << family << " " << name;
      EXPECT_TRUE(names.insert(name).second) << family << " " << name;
      EXPECT_TRUE(name.starts_with(family + "_") || name.starts_with("scaling_"))
          << family << " " << name;
      seen |= row.bit;
    }
  });
}

}  // namespace
}  // namespace posenc
