// A call as the C arguments of posenc/plugin.h: the argument struct, its DLTensors, their shapes
// and strides, and the scaling factors, in shared memory where the library's child reads them at
// the same addresses. The tensors themselves are mirrored (mirror.h), each under its name in the
// Call's view table; one c_args per family (plugin/<family>_args.cc) fills its C struct field by
// field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "plugin/mirror.h"
#include "posenc/families.h"
#include "posenc/plugin.h"

namespace posenc::plugin {

// Small objects of one call in pages of shared memory.
class Block {
 public:
  explicit Block(SharedMemory& memory) : memory_(memory) {}

  template <class T>
  T* put(const T& value) {
    return new (allocate(sizeof(T), alignof(T))) T(value);
  }
  // A copy of n elements; null for none, as an empty vector's data may be.
  template <class T>
  const T* copy(const T* data, size_t n) {
    if (n == 0) return nullptr;
    T* to = static_cast<T*>(allocate(sizeof(T) * n, alignof(T)));
    std::copy(data, data + n, to);
    return to;
  }
  const std::vector<std::pair<uint8_t*, size_t>>& chunks() const { return chunks_; }

 private:
  void* allocate(size_t bytes, size_t align);  // throws KernelFailure when memory runs out

  SharedMemory& memory_;
  std::vector<std::pair<uint8_t*, size_t>> chunks_;
  size_t used_ = 0;
};

// The DLTensors of one call, in the block: every view of the call's table is registered with the
// mirror under its name; map() mirrors them all and then fills in the DLTensors, whose addresses
// the argument struct already holds.
class Tensors {
 public:
  template <class Call>
  Tensors(SharedMemory& memory, Block& block, Call& call) : mirror_(&memory), block_(block) {
    for_each_view(call, [&](const ViewField<Call>& field, Tensor& view) {
      mirror_.add(field.name, view, field.is_output());
      entries_.push_back({&view, block_.put(DLTensor{})});
    });
  }

  // The DLTensor of a view of the call, null for an absent optional one.
  const DLTensor* operator()(const Tensor& view) const;
  const DLTensor* operator()(const std::optional<Tensor>& view) const {
    return view ? (*this)(*view) : nullptr;
  }
  void map();
  Mirror& mirror() { return mirror_; }
  Block& block() { return block_; }

 private:
  Mirror mirror_;
  Block& block_;
  std::vector<std::pair<Tensor*, DLTensor*>> entries_;
};

posenc_rope_scaling c_scaling(const RopeScaling& scaling, Block& block);

// One per family, in plugin/<family>_args.cc: the call's fields in its C struct's order, put in
// the tensors' shared block (where the child reads them).
#define POSENC_FAMILY(name, Call, NAME) const void* c_args(Call& call, Tensors& tensors);
#include "posenc/families.inc"

}  // namespace posenc::plugin
