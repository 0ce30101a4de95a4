// softmax(softcap(scale·q·kᵀ) + alibi + bias + mask)·v in fp64 (mask: causal, sliding window and
// chunks, visible()), with the sink's logit in the softmax's denominator, one query row and head at
// a time; and, if asked, ln of each row's denominator (the sink's share included).
#include <cmath>
#include <limits>
#include <vector>

#include "reference/reference.h"

namespace posenc::reference {

void attention(const AttentionCall& call) {
  call.validate();
  const Tensor &q = call.q, &k = call.k, &v = call.v, &out = call.out;
  const int64_t tq = q.shape[0], hq = q.shape[1], d = q.shape[2];
  const int64_t tk = k.shape[0], group = hq / k.shape[1], dv = v.shape[2];
  const double scale = call.resolved_scale();
  const double kMasked = -std::numeric_limits<double>::infinity();
  std::vector<double> score(tk), acc(dv);

  for (int64_t h = 0; h < hq; ++h) {
    const int64_t kvh = h / group;
    for (int64_t i = 0; i < tq; ++i) {
      // Scores; a key the mask or the window hides gets −∞ and is never read again.
      double row_max = kMasked;
      bool any_nan = false;
      for (int64_t j = 0; j < tk; ++j) {
        if (!call.visible(i, j)) {
          score[j] = kMasked;
          continue;
        }
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += load(q, q.offset(i, h, c)) * load(k, k.offset(j, kvh, c));
        score[j] = call.logit(scale * dot) + call.alibi(h, i, j) +
                   (call.bias ? load(*call.bias, call.bias->offset(h, i, j)) : 0.0);
        if (std::isnan(score[j])) any_nan = true;
        if (score[j] > row_max) row_max = score[j];
      }
      // The sink joins the maximum and the denominator (no value): e^(sink − max).
      const double sink = call.sink(h);
      row_max = std::max(row_max, sink);
      // softmax with the row maximum subtracted; keys at −∞ contribute nothing, not even NaN.
      std::fill(acc.begin(), acc.end(), 0.0);
      double total = sink == kMasked ? 0 : std::exp(sink - row_max);
      if (any_nan) {
        std::fill(acc.begin(), acc.end(), std::nan(""));
        total = 1;
      } else if (row_max != kMasked) {
        for (int64_t j = 0; j < tk; ++j) {
          if (score[j] == kMasked) continue;
          const double w = std::exp(score[j] - row_max);
          total += w;
          for (int64_t c = 0; c < dv; ++c) acc[c] += w * load(v, v.offset(j, kvh, c));
        }
      }
      // The denominator Σ_j exp(score_j) is e^row_max · total. No visible key: the row is
      // defined as zeros.
      for (int64_t c = 0; c < dv; ++c)
        store(out, out.offset(i, h, c), total > 0 ? acc[c] / total : 0.0);
      if (call.lse) {
        double lse = row_max + std::log(total);  // −∞ when no key is visible (total = 0)
        if (any_nan) lse = std::nan("");
        if (!any_nan && row_max == std::numeric_limits<double>::infinity()) lse = row_max;
        store(*call.lse, call.lse->offset(i, h), lse);
      }
    }
  }
}

}  // namespace posenc::reference
