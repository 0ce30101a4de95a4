// posenc::run (posenc/run.h): the registry's "<family>/optimized" entry, found once per family.
#include "posenc/run.h"

#include <string>

#include "optimized/optimized.h"
#include "posenc/registry.h"

namespace posenc {
namespace {

// The family's "<family>/optimized" entry, or its reference while it has none.
// Out of line: inlined, its string work made run() save every register on each call.
template <class Call>
[[gnu::noinline]] const Impl<Call>& find_best() {
  const std::string name = std::string(family_name(Call::kFamily)) + "/optimized";
  for (const auto& impl : implementations<Call>())
    if (impl.name == name) return impl;
  return reference_impl<Call>();
}

template <class Call>
void run_best(const Call& call) {
  static const Impl<Call>& best = find_best<Call>();
  best.run(call);
}

}  // namespace

#define POSENC_FAMILY(name, Call, NAME) \
  void run(const Call& call) { run_best(call); }
#include "posenc/families.inc"

RopeStep::RopeStep(const RopeCall& call) : step_(optimized::rope_step(call)) {}

}  // namespace posenc
