#include "optimized/table_rope.h"

#include <hwy/aligned_allocator.h>

#include "optimized/costs.h"
#include "optimized/thread_pool.h"

namespace posenc::optimized {

namespace {

// Tokens [begin, end) of a [tokens, heads, dim] view.
Tensor tokens_of(const Tensor& t, int64_t begin, int64_t end) {
  Tensor part = t;
  part.data =
      static_cast<char*>(t.data) + begin * t.strides[0] * static_cast<int64_t>(dtype_size(t.dtype));
  part.shape[0] = end - begin;
  return part;
}

}  // namespace

void run_table_rope(const RopeCall& call, int64_t padded, const TableRows& rows,
                    const Impl<RopeCall>& rope) {
  const int64_t tokens = call.q.shape[0], half = call.rotary_dim / 2;
  if (tokens == 0) return;
  auto table = hwy::AllocateAligned<float>(2 * tokens * padded);
  auto iota = hwy::AllocateAligned<int64_t>(tokens);
  for (int64_t t = 0; t < tokens; ++t) iota[t] = t;
  float *cos = table.get(), *sin = table.get() + tokens * padded;
  const int64_t heads = call.q.shape[1] + (call.k ? call.k->shape[1] : 0);
  const double per_token = kFreshSinCosPairNanos * static_cast<double>(half) +
                           rope_nanos_per_token(heads, call.q.shape[2], half);
  const int parts = plan_parts(call.threads, tokens, per_token);
  parallel_for(tokens, parts, [&](Range r) {
    rows(cos, sin, r.begin, r.end);
    // This part's tokens against the whole table: token t reads row t. A rope call made inside a
    // part runs on that part's thread, and computes each token as any partition would.
    RopeCall part = call;
    part.q = tokens_of(call.q, r.begin, r.end);
    part.q_out = tokens_of(call.q_out, r.begin, r.end);
    if (call.k) {
      part.k = tokens_of(*call.k, r.begin, r.end);
      part.k_out = tokens_of(*call.k_out, r.begin, r.end);
    }
    part.positions = view(iota.get() + r.begin, DType::i64, {r.end - r.begin});
    part.cos = view(cos, DType::f32, {tokens, half}, {padded, 1});
    part.sin = view(sin, DType::f32, {tokens, half}, {padded, 1});
    part.threads = 1;
    rope.run(part);
  });
}

}  // namespace posenc::optimized
