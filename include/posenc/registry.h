// The registry: one table per family listing every implementation, reference first. Tests,
// fuzzers, benchmarks and the CLI iterate these tables and never name a kernel; adding a kernel is
// one line in registry/<family>.cc.
#pragma once

#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/absolute.h"
#include "posenc/alibi.h"
#include "posenc/attention.h"
#include "posenc/kernel.h"
#include "posenc/rope.h"
#include "posenc/rope_cache.h"
#include "posenc/rope_frequencies.h"
#include "posenc/sinusoidal.h"
#include "posenc/t5.h"

namespace posenc {

// Every implementation of the family whose call type is Call; element 0 is the reference.
template <class Call>
const std::vector<Impl<Call>>& implementations();

template <>
const std::vector<Impl<AttentionCall>>& implementations<AttentionCall>();
template <>
const std::vector<Impl<AbsoluteCall>>& implementations<AbsoluteCall>();
template <>
const std::vector<Impl<SinusoidalCall>>& implementations<SinusoidalCall>();
template <>
const std::vector<Impl<RopeFrequenciesCall>>& implementations<RopeFrequenciesCall>();
template <>
const std::vector<Impl<RopeCacheCall>>& implementations<RopeCacheCall>();
template <>
const std::vector<Impl<RopeCall>>& implementations<RopeCall>();
template <>
const std::vector<Impl<AlibiCall>>& implementations<AlibiCall>();
template <>
const std::vector<Impl<T5Call>>& implementations<T5Call>();

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

// Calls f(std::type_identity<Call>{}) once per family, in a fixed order.
template <class F>
void for_each_family(F&& f) {
  f(std::type_identity<AttentionCall>{});
  f(std::type_identity<AbsoluteCall>{});
  f(std::type_identity<SinusoidalCall>{});
  f(std::type_identity<RopeFrequenciesCall>{});
  f(std::type_identity<RopeCacheCall>{});
  f(std::type_identity<RopeCall>{});
  f(std::type_identity<AlibiCall>{});
  f(std::type_identity<T5Call>{});
}

// Variant bits meaning "supports everything", for the reference.
inline constexpr uint64_t kAllVariants = ~uint64_t{0};

}  // namespace posenc
