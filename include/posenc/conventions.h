// Conventions engines legitimately differ on, as variant bits an implementation has when it
// accepts the inputs in question (issue 16): ±∞ and NaN inputs, int32 and int64 positions, YaRN
// with an unrounded correction range (HF's truncate = false). They sit in variant bits no family
// uses, and mean something only with `conventions_declared` set: an implementation without it
// accepts every convention (the built-in kernels, posenc::check's callables, version-1 and -2
// plugins). A version-3 plugin states restrictions instead (POSENC_CONVENTION_*, posenc/plugin.h);
// its loader sets `conventions_declared` and the bits of what it accepts. The harness generates
// only inputs inside them and never hands a kernel a call outside them.
#pragma once

#include <array>
#include <cstdint>

#include "posenc/kernel.h"

namespace posenc::variant {

inline constexpr uint64_t nonfinite_inputs = uint64_t{1} << 5;   // ±∞ or NaN in a float input
inline constexpr uint64_t positions_i32 = uint64_t{1} << 6;      // int32 positions
inline constexpr uint64_t positions_i64 = uint64_t{1} << 7;      // int64 positions
inline constexpr uint64_t yarn_untruncated = uint64_t{1} << 32;  // YaRN with truncate = false
inline constexpr uint64_t conventions_declared = uint64_t{1} << 33;
inline constexpr uint64_t all_conventions =
    nonfinite_inputs | positions_i32 | positions_i64 | yarn_untruncated;
inline constexpr std::array<VariantName, 5> convention_names = {
    {{nonfinite_inputs, "nonfinite_inputs"},
     {positions_i32, "positions_i32"},
     {positions_i64, "positions_i64"},
     {yarn_untruncated, "yarn_untruncated"},
     {conventions_declared, "conventions_declared"}}};

// `variants` with the conventions it accepts spelled out.
constexpr uint64_t with_conventions(uint64_t variants) {
  return (variants & conventions_declared) ? variants : variants | all_conventions;
}

}  // namespace posenc::variant
