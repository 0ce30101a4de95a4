// The mutations every family's bad-input property shares.
#include "properties/generic.h"

#include <gtest/gtest.h>

namespace posenc::harness {
namespace {

// A "wrong dtype" view keeps its element size, so it never claims memory past its allocation: an
// f16 output mutated to f32 once let a plugin kernel that accepted it write twice its buffer's
// bytes, which the mirror copied back into the harness's heap (`posenc validate --kernel` on
// examples/rope_kernels_fp32_angles.c aborted with "double free or corruption").
TEST(ViewMutations, WrongDtypeKeepsTheElementSize) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64}) {
    const DType other = same_size_other_dtype(dtype);
    EXPECT_NE(other, dtype) << dtype_name(dtype);
    EXPECT_EQ(dtype_size(other), dtype_size(dtype)) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace posenc::harness
