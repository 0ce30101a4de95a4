// The user's own header, at the path posenc's harness keeps its own compare.h under.
#pragma once

namespace mine {
inline constexpr int kCompareVersion = 7;
}  // namespace mine
