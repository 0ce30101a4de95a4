// Every family's header: with the family's line in families.inc, the one place a family is named
// outside its own files.
#pragma once

#include "posenc/absolute.h"
#include "posenc/alibi.h"
#include "posenc/attention.h"
#include "posenc/mrope.h"
#include "posenc/rope.h"
#include "posenc/rope_cache.h"
#include "posenc/rope_frequencies.h"
#include "posenc/sinusoidal.h"
#include "posenc/t5.h"
#include "posenc/vision_rope.h"

namespace posenc {

// The Call types, in families.inc's order, handed to a template: AllCalls::apply<std::tuple>.
template <class... Calls>
struct CallList {
  template <template <class...> class T>
  using apply = T<Calls...>;
};
namespace detail {
template <class First, class... Calls>
using drop_first = CallList<Calls...>;
}  // namespace detail
using AllCalls = detail::drop_first<void
#define POSENC_FAMILY(name, Call, NAME) , Call
#include "posenc/families.inc"
                                    >;

}  // namespace posenc
