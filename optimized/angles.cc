#include "optimized/angles.h"

#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <numbers>

namespace posenc::optimized {

Angles split_angles(const Frequencies& f) {
  Angles a;
  a.count = static_cast<int64_t>(f.inv_freq.size());
  const int64_t padded = (a.count + kAnglePad - 1) / kAnglePad * kAnglePad;
  a.hi.assign(padded, 0.0);
  a.lo.assign(padded, 0.0);
  a.over_pi.assign(padded, 0.0);
  for (int64_t i = 0; i < a.count; ++i) {
    const double omega = f.inv_freq[i];
    // Clear the low 26 of the 52 stored mantissa bits: hi keeps 27 significant bits.
    const double hi =
        std::bit_cast<double>(std::bit_cast<uint64_t>(omega) & ~((uint64_t{1} << 26) - 1));
    a.hi[i] = hi;
    a.lo[i] = omega - hi;  // exact: the cleared bits
    a.over_pi[i] = omega / std::numbers::pi;
    a.max_omega = std::max(a.max_omega, omega);
    a.tiny_omega = a.tiny_omega || a.hi[i] + a.lo[i] < 0x1p-60;
  }
  a.attention_factor = f.attention_factor;
  return a;
}

namespace {

bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_bits(a[i], b[i])) return false;
  }
  return true;
}

struct Memo {
  bool valid = false;
  uint64_t version = 0;
  int64_t rotary_dim = 0;
  double base = 0;
  RopeScaling scaling;
  Angles angles;
};

Memo& this_thread_memo() {
  thread_local Memo memo;
  return memo;
}

// This thread's memo's angles if it still holds what `ticket` saw it return, else null. A version
// names one memo's one computation, so matching it is matching this memo's contents.
const Angles* held(const AnglesTicket& ticket) {
  const Memo& memo = this_thread_memo();
  return ticket.version == memo.version && memo.valid ? &memo.angles : nullptr;
}

}  // namespace

bool same_scaling(const RopeScaling& a, const RopeScaling& b) {
  static_assert(sizeof(RopeScaling) == 160, "a field was added to RopeScaling: compare it here");
  return a.kind == b.kind && same_bits(a.factor, b.factor) && same_bits(a.alpha, b.alpha) &&
         a.max_position == b.max_position && a.original_max_position == b.original_max_position &&
         a.seq_len == b.seq_len && same_bits(a.beta_fast, b.beta_fast) &&
         same_bits(a.beta_slow, b.beta_slow) && same_bits(a.mscale, b.mscale) &&
         same_bits(a.mscale_all_dim, b.mscale_all_dim) && a.truncate == b.truncate &&
         same_bits(a.low_freq_factor, b.low_freq_factor) &&
         same_bits(a.high_freq_factor, b.high_freq_factor) &&
         same_bits(a.short_factor, b.short_factor) && same_bits(a.long_factor, b.long_factor) &&
         same_bits(a.attention_factor, b.attention_factor);
}

const Angles& rope_angles(int64_t rotary_dim, double base, const RopeScaling& scaling) {
  Memo& memo = this_thread_memo();
  if (!memo.valid || memo.rotary_dim != rotary_dim || !same_bits(memo.base, base) ||
      !same_scaling(memo.scaling, scaling)) {
    // Versions come from one counter: a thread that reuses a finished thread's memo address
    // never matches that thread's tickets.
    static std::atomic<uint64_t> next_version{1};
    memo.valid = false;  // stays invalid if computing throws
    memo.angles = split_angles(compute_frequencies(rotary_dim, base, scaling));
    memo.rotary_dim = rotary_dim;
    memo.base = base;
    memo.scaling = scaling;
    memo.version = next_version.fetch_add(1, std::memory_order_relaxed);
    memo.valid = true;
  }
  return memo.angles;
}

const Angles& rope_angles(int64_t rotary_dim, double base, const RopeScaling& scaling,
                          AnglesTicket& ticket) {
  if (const Angles* angles = held(ticket)) return *angles;
  const Angles& angles = rope_angles(rotary_dim, base, scaling);
  ticket.version = this_thread_memo().version;
  return angles;
}

const Angles& sinusoidal_angles(int64_t d, double base) {
  // This thread's last (d, base) and its ticket: a repeat compares three numbers, not a fresh
  // RopeScaling's every field (a twentieth of a one-token width-512 table).
  thread_local struct {
    int64_t d = -1;
    double base = 0;
    AnglesTicket ticket;
  } last;
  if (last.d == d && same_bits(last.base, base)) {
    if (const Angles* angles = held(last.ticket)) return *angles;
  }
  last = {};  // matches nothing, even if computing throws
  const Angles& angles = rope_angles(d, base, RopeScaling{}, last.ticket);
  last.d = d;
  last.base = base;
  return angles;
}

void sincos_libm(double hi, double lo, double& sin, double& cos) {
  // sin(hi + lo) = sin hi · cos lo + cos hi · sin lo; |lo| ≤ 2⁻²⁶·|hi| is tiny next to a turn.
  const double sh = std::sin(hi), ch = std::cos(hi), sl = std::sin(lo), cl = std::cos(lo);
  sin = sh * cl + ch * sl;
  cos = ch * cl - sh * sl;
}

void fill_steps(const Angles& angles) {
  if (angles.steps) return;
  // Each of sin hi, cos hi within an ulp (glibc), sin lo and cos lo within an ulp of values near lo
  // and 1, and the two products and a sum rounded: < 5·2⁻⁵³ in all, below 2⁻⁵⁰.
  const int64_t n = angles.padded();
  auto steps = hwy::AllocateAligned<double>(static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i)  // padded lanes have θ = 0: sin 0, cos 1
    sincos_libm(angles.hi[i], angles.lo[i], steps[i], steps[n + i]);
  angles.steps = std::shared_ptr<const double[]>(steps.release(), hwy::AlignedFreer());
}

}  // namespace posenc::optimized
