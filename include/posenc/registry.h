// The registry: one table per family listing every implementation, reference first. Tests,
// fuzzers, benchmarks and the CLI iterate these tables and never name a kernel; adding a kernel is
// one line in registry/<family>.cc.
#pragma once

#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/families.h"
#include "posenc/kernel.h"

namespace posenc {

// Every implementation of the family whose call type is Call; element 0 is the reference.
template <class Call>
const std::vector<Impl<Call>>& implementations();

#define POSENC_FAMILY(name, Call, NAME) \
  template <>                           \
  const std::vector<Impl<Call>>& implementations<Call>();
#include "posenc/families.inc"

// A family's table: its reference, then `others` in order.
template <class Call>
std::vector<Impl<Call>> reference_then(Impl<Call> reference, std::vector<Impl<Call>> others) {
  others.insert(others.begin(), std::move(reference));
  return others;
}

template <class Call>
const Impl<Call>& reference_impl() {
  return implementations<Call>().front();
}

// Calls f(std::type_identity<Call>{}) once per family, in families.inc's order.
template <class F>
void for_each_family(F&& f) {
#define POSENC_FAMILY(name, Call, NAME) f(std::type_identity<Call>{});
#include "posenc/families.inc"
}

// Variant bits meaning "supports everything", for the reference.
inline constexpr uint64_t kAllVariants = ~uint64_t{0};

}  // namespace posenc
