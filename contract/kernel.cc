#include "posenc/kernel.h"

#include <cstdlib>
#include <string>
#include <thread>

#include "posenc/error.h"

namespace posenc {

const char* family_name(Family family) {
  switch (family) {
#define POSENC_FAMILY(name, Call, NAME) \
  case Family::name:                    \
    return #name;
#include "posenc/families.inc"
  }
  return "?";
}

uint64_t view_variants(std::initializer_list<const Tensor*> views) {
  uint64_t bits = 0;
  for (const Tensor* t : views) {
    if (t == nullptr) continue;
    if (t->dtype == DType::f32) bits |= variant::f32;
    if (t->dtype == DType::bf16) bits |= variant::bf16;
    if (t->dtype == DType::f16) bits |= variant::f16;
    if (!t->contiguous()) bits |= variant::strided;
  }
  return bits;
}

int resolve_threads(int requested) {
  POSENC_REQUIRE(requested >= 0, "threads", requested, "must be >= 0 (0 picks the default)");
  if (requested > 0) return requested;
  if (const char* env = std::getenv("POSENC_NUM_THREADS"); env && *env) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    POSENC_REQUIRE(*end == '\0' && n > 0 && n <= 1024, "POSENC_NUM_THREADS", env,
                   "must be an integer in [1, 1024]");
    return static_cast<int>(n);
  }
  static const unsigned hw = std::thread::hardware_concurrency();  // a syscall: ask once
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void check_threads(int threads) {
  // POSENC_REQUIRE: no strings built on a valid call (every kernel call checks this).
  POSENC_REQUIRE(threads >= 0, "threads", threads, "must be >= 0 (0 picks the default)");
}

}  // namespace posenc
