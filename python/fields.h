// Each family's Call struct field by field, as Python sees it: keyword arguments and the arguments
// handed to a checked callable carry these names (include/posenc/<family>.h). fields(call, visit)
// calls visit(name, member, role): the views in their table's order (kernel.h's view_table, inputs
// then outputs), then the parameters (the Call's for_each_parameter).
#pragma once

#include <type_traits>

#include "posenc/registry.h"

namespace posenc::python {

enum class Role { input, output, scalar };
inline constexpr Role in = Role::input, out = Role::output, scalar = Role::scalar;

template <class Call, class V>
void fields(Call& c, V&& v) {
  for (const auto& field : std::remove_const_t<Call>::view_table()) {
    const Role role = field.is_output() ? out : in;
    if (field.required)
      v(field.name, c.*field.required, role);
    else
      v(field.name, c.*field.optional, role);
  }
  Call::for_each_parameter(c, [&](const char* name, auto& member) { v(name, member, scalar); });
}

}  // namespace posenc::python
