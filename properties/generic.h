// The properties every family shares, written once over a family's problem generator:
//   differential  every implementation agrees with the reference within its stated bound;
//   guard_bytes   nothing is written outside the outputs (guards, padding, inputs) and nothing
//                 read outside the tensors (each flush against an inaccessible page);
//   layouts       contiguous, padded and permuted views of the same tensors give the same bits;
//   threads       1, 2, 3 and 7 threads give the same bits;
//   bad_input     an invalid call raises posenc::Error naming the contract's argument, writing
//                 nothing.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "posenc/error.h"
#include "properties/generators.h"
#include "properties/harness.h"
#include "properties/property.h"

namespace posenc::harness {

// Tags a case with its activations' dtype (gen::float_dtype) for the shares below.
inline void classify_dtype(DType dtype) {
  RC_CLASSIFY(dtype == DType::f32, "f32");
  RC_CLASSIFY(dtype == DType::bf16, "bf16");
  RC_CLASSIFY(dtype == DType::f16, "f16");
}

// Tags a bias's query and key counts: decode (one query) over a long KV cache (gen::decode_keys),
// and counts that 2, 3 and 7 threads (the threads property's) all leave a remainder of.
inline void classify_tokens(const Positions& q, const Positions& k) {
  const auto tq = static_cast<int64_t>(q.values.size()), tk = static_cast<int64_t>(k.values.size());
  auto remainder = [](int64_t n) { return n % 2 != 0 && n % 3 != 0 && n % 7 != 0; };
  RC_CLASSIFY(tq == 1 && tk >= 512, "decode with long KV");
  RC_CLASSIFY(tq == 1 && tk > 16384, "decode with over 16384 keys");
  RC_CLASSIFY(tq > 1 && remainder(tq), "queries not a multiple of 2, 3 or 7");
  RC_CLASSIFY(remainder(tk), "keys not a multiple of 2, 3 or 7");
}

// The minimum shares of each dtype (expected: f32 50%, bf16 and f16 25% each): bf16 and f16 cases
// never run dry, and an implementation that declares f32 only still runs at least 35% of the cases
// (70 of CI's 200), more than 4 standard deviations below the expected 50%.
inline std::vector<MinimumShare> dtype_shares(std::vector<MinimumShare> others = {}) {
  for (const char* tag : {"bf16", "f16"}) others.push_back({tag, 0.15});
  others.push_back({"f32", 0.35});
  return others;
}

// Turns a valid call into an invalid one; returns false when this call has nothing to break
// (e.g. no positions when there are no tokens), and the case is discarded.
template <class Call>
struct Mutation {
  std::string what;
  std::function<bool(Call&, Arena&)> apply;
};

template <class Call>
void showValue(const Mutation<Call>& m, std::ostream& os) {
  os << "mutation: " << m.what;
}

// A tensor of a call, or null when the call has none (an absent optional view).
template <class Call>
using ViewOf = std::function<Tensor*(Call&)>;

// Another dtype of the same element size: float ↔ int for 4 and 8 bytes (wrong in every family's
// views), bf16 ↔ f16 (wrong when a peer view keeps the other; else the call stays valid and the
// case is discarded). Never a wider one: a mutated view must not claim memory past its
// allocation, which a plugin kernel that accepts it would write into through the mirror.
inline DType same_size_other_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return DType::i32;
    case DType::i32:
      return DType::f32;
    case DType::f64:
      return DType::i64;
    case DType::i64:
      return DType::f64;
    case DType::bf16:
      return DType::f16;
    case DType::f16:
      return DType::bf16;
  }
  return dtype;
}

// Breaks `name` the ways any view can be broken: negative stride, null data, wrong dtype, wrong
// rank; and for an output, two elements sharing memory.
template <class Call>
std::vector<Mutation<Call>> view_mutations(const std::string& name, ViewOf<Call> view,
                                           bool output) {
  std::vector<Mutation<Call>> m = {
      {name + " stride < 0",
       [view](Call& c, Arena&) {
         Tensor* t = view(c);
         if (!t || t->rank == 0 || t->shape[0] < 2) return false;
         t->strides[0] = -t->strides[0] - 1;
         return true;
       }},
      {name + " null",
       [view](Call& c, Arena&) {
         Tensor* t = view(c);
         if (!t || t->numel() == 0) return false;
         t->data = nullptr;
         return true;
       }},
      {name + " wrong dtype",
       [view](Call& c, Arena&) {
         Tensor* t = view(c);
         if (!t) return false;
         t->dtype = same_size_other_dtype(t->dtype);
         return true;
       }},
      {name + " wrong rank",
       [view](Call& c, Arena&) {
         Tensor* t = view(c);
         if (!t || t->rank >= kMaxRank) return false;
         t->shape[t->rank] = 1;
         t->strides[t->rank] = 1;
         ++t->rank;
         return true;
       }},
  };
  if (output)
    m.push_back({name + " self-overlapping", [view](Call& c, Arena&) {
                   Tensor* t = view(c);
                   if (!t || t->rank == 0 || t->shape[0] < 2 || t->numel() == 0) return false;
                   t->strides[0] = 0;
                   return true;
                 }});
  return m;
}

// An output whose memory overlaps an input without being the same view: it starts one element
// into the input.
template <class Call>
Mutation<Call> overlap_mutation(const std::string& out_name, ViewOf<Call> out,
                                const std::string& in_name, ViewOf<Call> in) {
  return {out_name + " overlaps " + in_name, [out, in](Call& c, Arena&) {
            Tensor *o = out(c), *i = in(c);
            if (!o || !i || o->numel() == 0 || i->numel() < 2 || o->dtype != i->dtype) return false;
            o->data = static_cast<char*>(i->data) + dtype_size(i->dtype);
            return true;
          }};
}

// Sets the last position of `name` to `value(call)`.
template <class Call>
Mutation<Call> position_mutation(const std::string& what, ViewOf<Call> view,
                                 std::function<int64_t(const Call&)> value) {
  return {what, [view, value](Call& c, Arena&) {
            Tensor* t = view(c);
            if (!t || t->shape[0] == 0) return false;
            const int64_t v = value(c), off = t->offset(t->shape[0] - 1);
            if (t->dtype == DType::i64)
              t->as<int64_t>()[off] = v;
            else
              t->as<int32_t>()[off] = static_cast<int32_t>(v);
            return true;
          }};
}

// How a family's problems are generated and built. Spec is a printable, shrinkable description of
// one problem with a `layouts` member.
template <class Call, class Spec>
struct Problems {
  rc::Gen<Spec> any;    // every input class: shapes from empty up, layouts, positions, specials
  rc::Gen<Spec> large;  // big enough that a threaded kernel splits the work
  std::function<Call(const Spec&, Arena&)> build;
  std::function<void(const Spec&)> classify;  // RC_CLASSIFY / RC_TAG the spec's input classes
  std::vector<MinimumShare> minimum;          // for the shares of `any`
  std::vector<Mutation<Call>> mutations;
  // The classes of `large` (the threads property) and their minimum shares; none when unset.
  std::function<void(const Spec&)> classify_large;
  std::vector<MinimumShare> large_minimum;
};

// The call's tensors under their view-table names, for Arena::stray_read.
template <class Call>
std::vector<Arena::NamedView> named_views(const Call& call) {
  std::vector<Arena::NamedView> named;
  for_each_view(call, [&](const auto& field, const Tensor& t) {
    named.push_back({field.name, t, field.is_output()});
  });
  return named;
}

// Runs `impl` on a fresh build of `spec`, checking nothing was written outside the outputs and,
// in a read-guarded arena, nothing read outside the tensors. Returns the call (its outputs live
// in `arena`), or a failure.
template <class Call, class Spec>
std::optional<std::string> run_guarded(const Impl<Call>& impl, const Problems<Call, Spec>& p,
                                       const Spec& spec, Arena& arena, Call& call) {
  call = p.build(spec, arena);
  arena.snapshot();
  impl.run(call);
  if (auto stray = arena.stray_write(outputs(call))) return "wrote outside its outputs: " + *stray;
  if (auto stray = arena.stray_read(named_views(call)))
    return *stray + ", with every tensor flush against an inaccessible page at its " +
           read_guard_name(arena.guard());
  return std::nullopt;
}

// The family's compare() of two runs of `spec`, handing it a pristine build when it reads the
// inputs for its tolerance unit (a family whose calls may run in place).
template <class Call, class Spec>
Comparison compare_runs(const Problems<Call, Spec>& p, const Spec& spec, const Call& expected,
                        const Call& got, const Bound& bound) {
  if constexpr (unit_reads_inputs<Call>) {
    Arena arena;
    return compare(p.build(spec, arena), expected, got, bound);
  } else {
    return compare(expected, got, bound);
  }
}

template <class Call, class Spec>
std::vector<Property<Call>> generic_properties(const std::string& family,
                                               const Problems<Call, Spec>& p) {
  std::vector<Property<Call>> props;

  props.push_back(
      {.name = family + ".differential",
       .statement = "agrees with the fp64 reference within its stated bound, element by element",
       .body =
           [p](Case<Call>& c) {
             const Spec spec = *p.any;
             p.classify(spec);
             Arena ref_arena;
             const Call expected = p.build(spec, ref_arena);
             reference_impl<Call>().run(expected);
             c.each(expected, [&](const Impl<Call>& impl) {
               Arena arena;
               const Call got = p.build(spec, arena);
               impl.run(got);
               return Verdict::of(compare_runs(p, spec, expected, got, impl.bound));
             });
           },
       .skip_reference = true,
       .minimum = p.minimum});

  props.push_back({.name = family + ".guard_bytes",
                   .statement =
                       "writes nothing outside its outputs (not the guards, padding or inputs) and "
                       "reads nothing outside its tensors (each flush against an inaccessible page "
                       "at its end, then at its start)",
                   .body =
                       [p](Case<Call>& c) {
                         const Spec spec = *p.any;
                         p.classify(spec);
                         Arena probe;
                         const Call shape = p.build(spec, probe);
                         c.each(shape, [&](const Impl<Call>& impl) {
                           // Two placements, so a read past either end of any tensor touches a
                           // closed page.
                           for (ReadGuard side : {ReadGuard::end, ReadGuard::start}) {
                             Arena arena(side);
                             Call call;
                             if (auto stray = run_guarded(impl, p, spec, arena, call))
                               return Verdict::fail(*stray);
                           }
                           return Verdict::pass();
                         });
                       },
                   .minimum = p.minimum});

  props.push_back(
      {.name = family + ".layouts",
       .statement =
           "contiguous, padded, permuted and mixed views of the same tensors give identical bits",
       .body =
           [p](Case<Call>& c) {
             const Spec spec = *p.any;
             Spec flat = spec;
             flat.layouts = uniform_layouts(Layout::contiguous);
             Arena probe;
             const Call shape = p.build(spec, probe);
             RC_CLASSIFY(any_strided(spec.layouts), "mixed layouts");
             c.each(shape, [&](const Impl<Call>& impl) {
               Arena base_arena;
               const Call base = p.build(flat, base_arena);
               impl.run(base);
               Verdict v;
               for (const Layouts& l : {uniform_layouts(Layout::padded),
                                        uniform_layouts(Layout::permuted), spec.layouts}) {
                 Spec s = spec;
                 s.layouts = l;
                 Arena arena;
                 const Call got = p.build(s, arena);
                 if (!supports(impl, got)) continue;
                 impl.run(got);
                 const Comparison cmp = compare_runs(p, spec, base, got, 0);
                 if (!cmp.ok)
                   return Verdict::of(cmp,
                                      fmt::format("layout {} vs contiguous", layout_name(l[0])));
               }
               return v;
             });
           },
       .needs = variant::strided});

  props.push_back({.name = family + ".threads",
                   .statement = "1, 2, 3 and 7 threads give identical bits",
                   .body =
                       [p](Case<Call>& c) {
                         const Spec spec = *p.large;
                         if (p.classify_large) p.classify_large(spec);
                         Arena probe;
                         const Call shape = p.build(spec, probe);
                         c.each(shape, [&](const Impl<Call>& impl) {
                           Arena base_arena;
                           Call base = p.build(spec, base_arena);
                           base.threads = 1;
                           impl.run(base);
                           for (int threads : {2, 3, 7}) {
                             Arena arena;
                             Call got = p.build(spec, arena);
                             got.threads = threads;
                             impl.run(got);
                             const Comparison cmp = compare_runs(p, spec, base, got, 0);
                             if (!cmp.ok)
                               return Verdict::of(cmp, fmt::format("{} threads vs 1", threads));
                           }
                           return Verdict::pass();
                         });
                       },
                   .needs_threads = true,
                   .minimum = p.large_minimum});

  props.push_back(
      {family + ".bad_input",
       "an invalid call raises posenc::Error naming the contract's argument and writes nothing",
       [p](Case<Call>& c) {
         const Spec spec = *p.any;
         const Mutation<Call> mutation = *rc::gen::elementOf(p.mutations);
         Arena probe;
         Call call = p.build(spec, probe);
         if (!mutation.apply(call, probe)) RC_DISCARD("nothing to break");
         std::string argument;
         try {
           call.validate();
         } catch (const Error& e) {
           argument = e.argument();
         }
         if (argument.empty()) RC_DISCARD("still valid");
         RC_TAG(mutation.what);
         c.each(call, [&](const Impl<Call>& impl) {
           Arena arena;
           Call bad = p.build(spec, arena);
           mutation.apply(bad, arena);
           arena.snapshot();
           std::string verdict;
           try {
             impl.run(bad);
             verdict = "accepted it";
           } catch (const Error& e) {
             if (e.argument() != argument)
               verdict =
                   fmt::format("named '{}' instead of '{}': {}", e.argument(), argument, e.what());
           } catch (const std::exception& e) {
             verdict = fmt::format("threw {} instead of posenc::Error", e.what());
           }
           if (auto stray = arena.stray_write({}))
             verdict +=
                 (verdict.empty() ? "" : "; ") + std::string("wrote before rejecting: ") + *stray;
           if (verdict.empty()) return Verdict::pass();
           return Verdict::fail(fmt::format("{}: {}", mutation.what, verdict));
         });
       }});
  return props;
}

}  // namespace posenc::harness
