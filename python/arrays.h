// NumPy arrays and torch tensors as posenc::Tensor views and back, zero-copy: shapes as they are,
// strides converted between bytes (NumPy) and elements (posenc, torch).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "posenc/tensor.h"

namespace posenc::python {

namespace py = pybind11;

// What a checked callable is handed.
enum class Arrays { numpy, torch };

// A view of `array`'s memory. posenc::Error naming `name` when it is not a numpy.ndarray or a
// torch.Tensor, lives off the CPU, has no posenc dtype or more than kMaxRank dimensions, has
// strides that are not whole elements, or is a read-only `output`.
Tensor tensor_of(py::handle array, const std::string& name, bool output);

// A numpy.ndarray or torch.Tensor viewing t's memory (it does not own it). posenc::Error naming
// the view when Python cannot express it: null data, bf16 in NumPy (it has no bfloat16),
// negative strides in torch. Those calls are bad input that no Python caller could make, so the
// bridge rejects them on the callable's behalf, naming the argument as posenc's validation does.
py::object array_of(const Tensor& t, const std::string& name, Arrays arrays);

}  // namespace posenc::python
