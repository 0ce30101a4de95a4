// GoogleTest helpers shared by the unit tests of every layer.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "posenc/error.h"
#include "properties/arena.h"

namespace posenc::harness {

// Runs `run(call)` and expects posenc::Error naming `argument`, with no byte of any buffer in
// `arena` changed.
template <class Run, class Call>
void expect_rejected(Run&& run, const Call& call, Arena& arena, const std::string& argument) {
  arena.snapshot();
  try {
    run(call);
    ADD_FAILURE() << "accepted bad " << argument;
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(e.value()), std::string::npos) << e.what();
  }
  const auto stray = arena.stray_write({});
  EXPECT_FALSE(stray.has_value()) << "rejected call still wrote: " << *stray;
}

}  // namespace posenc::harness
