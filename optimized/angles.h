// Frequencies and exact angles, shared by sinusoidal, rope_cache and rope (target-independent).
//
// fp32 angles p·ω drift by about p·2⁻²⁴ rad. Here each ω is split as hi + lo, hi holding its top
// 27 significant bits and lo the rest (≤ 26 bits), so for an integer position 0 ≤ p ≤ 2²⁴
// (25 bits) both p·hi and p·lo are exact doubles and θ = p·ω = p·hi + p·lo holds exactly. The
// per-target SinCos (math-inl.h) reduces θ modulo π in double from that pair.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "posenc/rope_frequencies.h"

namespace posenc::optimized {

// The vector sin/cos is accurate for 0 ≤ θ ≤ kMaxVectorAngle (k = round(θ/π) < 2²⁵, so k·π₁ is
// exact); larger angles (ω > 8 at p = 2²⁴, only for unusual bases or scalings) use libm.
inline constexpr double kMaxVectorAngle = 134217728.0;  // 2^27
// Frequency arrays are zero-padded to a multiple of this (≥ twice the widest double vector), so
// kernels load whole vectors; padded lanes hold θ = 0.
inline constexpr int64_t kAnglePad = 16;

struct Angles {
  int64_t count = 0;           // frequencies
  std::vector<double> hi, lo;  // ω = hi + lo, padded with zeros to a multiple of kAnglePad
  std::vector<double> over_pi;  // ω/π rounded, padded alike: p·ω/π to within 2⁻²⁶ below 2²⁷ rad
  double max_omega = 0;
  bool tiny_omega = false;  // some ω = hi + lo below 2⁻⁶⁰ (rope guards its outputs then)
  double attention_factor = 1;
  // One position's fresh sin and cos (AngleWalker's, padded() each), kept beside the frequencies
  // they came from: a model's layers rotate one decode step at the same position, so every call of
  // a step but the first reads them. Only a call running on the thread that owns this memo (rope's
  // one-token calls, which never split) reads or writes them.
  mutable int64_t fresh_position = -1;
  mutable std::vector<double> fresh_sin, fresh_cos;
  // rope's f32 coefficients of that position, f·cos θ and sign·f·sin θ (sign 0 until computed).
  mutable float fresh_sign = 0;
  mutable std::vector<float> fresh_c, fresh_s;

  // sin ω_i then cos ω_i (one position's rotation), padded() each, by libm (off by < 2⁻⁵⁰):
  // sinusoidal's chains step by them. Null until fill_steps, on the thread that owns this memo.
  mutable std::shared_ptr<const double[]> steps;  // aligned for any vector; shared by copies

  int64_t padded() const { return static_cast<int64_t>(hi.size()); }
  // Whether every angle p·ω of position p is in the vector sin/cos range.
  bool vector_range(int64_t position) const {
    return static_cast<double>(position) * max_omega <= kMaxVectorAngle;
  }
};

// ω_i and the attention factor for a rope scaling, from the formulas in rope_frequencies.h.
struct Frequencies {
  std::vector<double> inv_freq;
  double attention_factor = 1;
};
Frequencies compute_frequencies(int64_t rotary_dim, double base, const RopeScaling& scaling);

// The split angles of any frequencies, with empty per-position memos (no fresh position, no steps).
Angles split_angles(const Frequencies& f);

// Whether two scalings have every field the same, bit for bit (a NaN attention_factor included):
// rope_angles' memo and run()'s repeated decode call both rely on it never confusing two sets.
bool same_scaling(const RopeScaling& a, const RopeScaling& b);

// The split angles of the rope frequencies, and of the sinusoidal ones (ω_i = base^(−2i/d), the
// unscaled rope frequencies). Memoized: each thread keeps its last request, so a kernel called
// again with the same parameters skips the pow calls. The reference stays valid until this thread
// asks again.
const Angles& rope_angles(int64_t rotary_dim, double base, const RopeScaling& scaling);
// The same, for a caller that asks again and again with one parameter set (a RopeStep): while this
// thread's memo still holds what `ticket` saw it return, the parameters are not compared again
// (about a tenth of a [1, 8, 64] decode step). A ticket starts empty, and works on any thread.
struct AnglesTicket {
  uint64_t version = 0;  // of the memo's contents; unique across threads and recomputations
};
const Angles& rope_angles(int64_t rotary_dim, double base, const RopeScaling& scaling,
                          AnglesTicket& ticket);
const Angles& sinusoidal_angles(int64_t d, double base);

// sin and cos of θ = hi + lo by libm, for angles past kMaxVectorAngle.
void sincos_libm(double hi, double lo, double& sin, double& cos);

// Fills angles.steps if empty. Call it on the thread that owns the memo, before any part reads.
void fill_steps(const Angles& angles);

}  // namespace posenc::optimized
