// What check_positions (tensor.h) learned of a positions view's values while it checked them: a
// kernel asks right after its call's validate(), instead of scanning the positions again.
#pragma once

#include <optional>

#include "posenc/tensor.h"

namespace posenc {

// Whether the values of `positions` were consecutive (p[i] = p[0] + i) when check_positions last
// passed this exact view (data, dtype, length, stride) on this thread, among the last two views it
// checked; nullopt when it did not look (a strided view) or no longer knows. Found in the range
// test's own pass; the bias kernels use it to skip their own scan of the keys.
std::optional<bool> checked_consecutive(const Tensor& positions);

}  // namespace posenc
