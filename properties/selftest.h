// The harness tests itself: in-tree broken kernels, each a realistic bug, registered as Impl
// entries the way plugins are (never in the main registry). The self-test runs every property of a
// family over them and asserts that each is caught by the property designed to catch it, and that
// every property catches at least one of them.
#pragma once

#include <string>
#include <vector>

#include "posenc/registry.h"

namespace posenc::harness {

template <class Call>
struct Broken {
  Impl<Call> impl;        // named "<family>/broken:<bug>"
  std::string bug;        // what is wrong, in one line
  std::string caught_by;  // the property designed to catch it
};

template <class Call>
std::vector<Broken<Call>> broken_implementations();

// Generic properties with no realistic bug in this family (e.g. thread nondeterminism in a pure
// lookup), each with the property instance in another family whose broken kernel fails it.
template <class Call>
std::vector<std::pair<std::string, std::string>> killed_elsewhere();

}  // namespace posenc::harness
