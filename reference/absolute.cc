// out[t] = x[t] + table[positions[t]].
#include "reference/reference.h"

namespace posenc::reference {

void absolute(const AbsoluteCall& call) {
  call.validate();
  const int64_t tokens = call.x.shape[0], dim = call.x.shape[1];
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t row = load_index(call.positions, call.positions.offset(t));
    for (int64_t c = 0; c < dim; ++c) {
      const double sum =
          load(call.x, call.x.offset(t, c)) + load(call.table, call.table.offset(row, c));
      store(call.out, call.out.offset(t, c), sum);
    }
  }
}

}  // namespace posenc::reference
