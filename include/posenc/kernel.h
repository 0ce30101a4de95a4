// What every family shares: the family names, the variant bits an implementation declares, the
// table of a Call's tensors, and Impl, one registry entry. A family's Call struct (in its own
// header) is the whole problem for one kernel invocation; Impl<Call> runs it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "posenc/tensor.h"

namespace posenc {

// The families, in families.inc's order (the plugin ABI's numbering).
enum class Family : uint8_t {
#define POSENC_FAMILY(name, Call, NAME) name,
#include "posenc/families.inc"
};
const char* family_name(Family family);

// Variant bits. Bits below kFamilyVariant0 mean the same in every family; each family header
// defines its own bits from kFamilyVariant0 up.
namespace variant {
inline constexpr uint64_t f32 = 1u << 0;
inline constexpr uint64_t bf16 = 1u << 1;
inline constexpr uint64_t f16 = 1u << 2;
inline constexpr uint64_t strided = 1u << 3;   // any view that is not row-major contiguous
inline constexpr uint64_t in_place = 1u << 4;  // output is the same view as an input
inline constexpr uint64_t kFamilyVariant0 = 1u << 8;
}  // namespace variant

// An enum parameter of a Call names its values, in order, with a function found by argument-
// dependent lookup: constexpr std::array<const char*, N> enum_names(Enum) (the Python module
// reads them).
//
// A variant bit and its name, as reports and the Python module spell it. Each Call names its own
// bits once, beside its views:  static constexpr std::array<VariantName, N> variant_table();
// (empty for a family without any). The shared bits are named here and in conventions.h.
struct VariantName {
  uint64_t bit;
  const char* name;
};
namespace variant {
inline constexpr std::array<VariantName, 5> shared_names = {
    {{f32, "f32"}, {bf16, "bf16"}, {f16, "f16"}, {strided, "strided"}, {in_place, "in_place"}}};
}  // namespace variant
// The rows of `a`, then those of `b`: a family whose table includes another's (the scalings).
template <size_t A, size_t B>
constexpr std::array<VariantName, A + B> join(const std::array<VariantName, A>& a,
                                              const std::array<VariantName, B>& b) {
  std::array<VariantName, A + B> both{};
  for (size_t i = 0; i < A; ++i) both[i] = a[i];
  for (size_t i = 0; i < B; ++i) both[A + i] = b[i];
  return both;
}

// The dtype bit of each float view and the strided bit if any view is not row-major contiguous.
uint64_t view_variants(std::initializer_list<const Tensor*> views);

// One tensor of a Call, a row of the table every Call lists its tensors in, once:
//   static constexpr std::array<ViewField<Call>, N> view_table();
// inputs first, then outputs (the fuzz decoder reads its bytes in this order). Everything that
// walks a call's tensors reads it: validate()'s overlap checks, the harness's views and outputs,
// the fuzz decoder, the plugin's marshalling.
template <class Call>
struct ViewField {
  enum Role : uint8_t { input, output };

  constexpr ViewField(const char* name, Tensor Call::*member, Role role = input,
                      const char* in_place_of = nullptr)
      : name(name), required(member), role(role), in_place_of(in_place_of) {}
  constexpr ViewField(const char* name, std::optional<Tensor> Call::*member, Role role = input,
                      const char* in_place_of = nullptr)
      : name(name), optional(member), role(role), in_place_of(in_place_of) {}

  const char* name;  // as the contract, its errors and the plugin ABI spell it
  Tensor Call::*required = nullptr;
  std::optional<Tensor> Call::*optional = nullptr;  // exactly one of the two is set
  Role role = input;
  const char* in_place_of = nullptr;  // an output that may be this input's very view

  bool is_output() const { return role == output; }
  // The tensor in `call`, or null when it is an absent optional one.
  template <class C>
  auto* in(C& call) const {
    if (required) return &(call.*required);
    auto& view = call.*optional;
    return view ? &*view : nullptr;
  }
};

// Calls f(field, tensor) for each tensor `call` has, in its table's order.
template <class C, class F>
void for_each_view(C& call, F&& f) {
  for (const auto& field : std::remove_const_t<C>::view_table())
    if (auto* tensor = field.in(call)) f(field, *tensor);
}

// validate()'s memory checks, from the table: no two elements of an output share memory, and no
// output shares any with an input, except the input it may be in place of when it is that very
// view. Outputs overlapping each other are the family's own check.
template <class Call>
void check_view_overlaps(const Call& call) {
  // Unrolled over the table at compile time, each view's byte range computed once: most pairs do
  // not meet and need no closer look, and a decode step's validation is much of its time.
  static constexpr auto table = Call::view_table();
  constexpr size_t n = table.size();
  // Each view's name, and the input's name an output may be in place of ("" for none).
  static constexpr auto names = [] {
    std::array<std::string_view, n> m{};
    for (size_t v = 0; v < n; ++v) m[v] = table[v].name;
    return m;
  }();
  static constexpr auto in_place_of = [] {
    std::array<std::string_view, n> m{};
    for (size_t v = 0; v < n; ++v)
      if (table[v].in_place_of) m[v] = table[v].in_place_of;
    return m;
  }();
  std::array<const Tensor*, n> views;
  std::array<ByteRange, n> ranges;
  const auto each = [](auto&& f) {
    [&]<size_t... v>(std::index_sequence<v...>) { (f(std::integral_constant<size_t, v>{}), ...); }
    (std::make_index_sequence<n>{});
  };
  each([&](auto v) {
    views[v] = table[v].in(call);
    ranges[v] = views[v] ? byte_range(*views[v]) : ByteRange{};
  });
  each([&](auto o) {
    if constexpr (table[o].role == ViewField<Call>::output) {
      if (!views[o]) return;
      check_no_self_overlap(*views[o], names[o]);
      each([&](auto i) {
        if constexpr (table[i].role == ViewField<Call>::input) {
          // Output o may be input i's very view (names compared at compile time).
          constexpr bool in_place = !in_place_of[o].empty() && in_place_of[o] == names[i];
          if (!views[i] || !ranges[o].meets(ranges[i])) return;
          if (in_place && same_view(*views[o], *views[i])) return;
          detail::check_no_overlap_meeting(*views[o], names[o], *views[i], names[i], in_place);
        }
      });
    }
  });
}

// Thread count of a call: 0 means POSENC_NUM_THREADS if set, else the hardware's concurrency.
// Implementations must give bitwise-identical output for every thread count.
int resolve_threads(int requested);
// Every family's validate() checks its call's thread count: negative is bad input, rejected by
// every implementation alike (the reference never resolves it).
void check_threads(int threads);

// bf16 and f16 outputs. A family's tolerance unit is one ulp of the magnitude its header names, in
// the OUTPUT's dtype: ulp_bf16(x) = 2¹⁶·ulp_f32(x) (8 significant bits), ulp_f16(x) (11 bits,
// subnormal step 2⁻²⁴, ±∞ past 65504). The reference rounds once from fp64 to the output dtype;
// every implementation with a nonzero bound is held to 1 such unit (a kernel that computes in f32
// within any f32 bound ≪ 2¹⁶ and rounds once more at the end lands on the reference's grid point
// or its neighbour), one with bound 0 to the reference's bits.
inline constexpr double kLowPrecisionBound = 1;

// An implementation's stated accuracy per output dtype, each in its family's tolerance unit of that
// dtype (one ulp of the family's magnitude in f32, bf16 or f16). An unset bf16 or f16 bound is the
// rule above: kLowPrecisionBound when the f32 bound is nonzero, else 0. A float-angle kernel can so
// state, say, 3000 f32 units and 2 bf16 units. Converts to and from its f32 bound, so code that
// knows one bound keeps its meaning.
struct Bound {
  double f32 = 0;
  std::optional<double> bf16, f16;

  constexpr Bound(double f32 = 0) : f32(f32) {}  // NOLINT: a plain number is the f32 bound
  constexpr Bound(double f32, std::optional<double> bf16, std::optional<double> f16)
      : f32(f32), bf16(bf16), f16(f16) {}
  constexpr operator double() const { return f32; }  // NOLINT
  // The bound an output of `dtype` is held to (f64 and integer outputs: the f32 bound).
  constexpr double of(DType dtype) const {
    const double rule = f32 > 0 ? kLowPrecisionBound : 0;
    if (dtype == DType::bf16) return bf16.value_or(rule);
    if (dtype == DType::f16) return f16.value_or(rule);
    return f32;
  }
};

// One implementation of a family. The registry keeps one table of these per family, reference
// first. `bound` is the implementation's stated accuracy in its family's tolerance unit (see the
// family header); the property suite holds it to that bound.
template <class Call>
struct Impl {
  std::string name;       // "<family>/<impl>", e.g. "rope/reference", "rope/hwy:AVX3"
  uint64_t variants = 0;  // variant bits it supports
  Bound bound = 0;        // stated accuracy per dtype, family tolerance unit
  std::function<void(const Call&)> run;
  // Null, or returns "", when this machine can run it; otherwise why not (shown, never silently
  // skipped).
  std::function<std::string()> unavailable;
  bool threaded = false;  // honours Call::threads
  // The largest position it claims to support, 0 for no claim: the report says up to which
  // position its bound holds, and whether that reaches this one.
  int64_t max_position = 0;

  std::string unavailable_reason() const { return unavailable ? unavailable() : std::string(); }
};

// Whether `impl` declares every variant `call` needs.
template <class Call>
bool supports(const Impl<Call>& impl, const Call& call) {
  return (call.required_variants() & ~impl.variants) == 0;
}

}  // namespace posenc
