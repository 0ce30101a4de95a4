#include "arrays.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <vector>

#include "posenc/error.h"

namespace posenc::python {

namespace {

// torch, if something imported it (posenc itself never imports torch for NumPy callers).
py::object torch_module() {
  py::dict modules = py::module_::import("sys").attr("modules");
  return modules.contains("torch") ? py::reinterpret_borrow<py::object>(modules["torch"])
                                   : py::none();
}

std::string type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__qualname__"));
}

struct DTypeName {
  DType dtype;
  const char* numpy;  // numpy's name; bf16 travels as int16 and is viewed as torch.bfloat16
  const char* torch;
};
constexpr DTypeName kDTypes[] = {
    {DType::f32, "float32", "torch.float32"}, {DType::f64, "float64", "torch.float64"},
    {DType::bf16, "int16", "torch.bfloat16"}, {DType::f16, "float16", "torch.float16"},
    {DType::i32, "int32", "torch.int32"},     {DType::i64, "int64", "torch.int64"},
};

const DTypeName& names_of(DType dtype) {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d;
  throw Error("dtype", std::to_string(static_cast<int>(dtype)), "is not a posenc dtype");
}

void set_rank(Tensor& t, size_t rank, const std::string& name) {
  if (rank > kMaxRank)
    throw Error(name, fmt::format("rank {}", rank),
                fmt::format("posenc views have at most {} dimensions", kMaxRank));
  t.rank = static_cast<int>(rank);
}

Tensor torch_tensor(py::handle obj, const std::string& name) {
  const std::string device = py::str(obj.attr("device").attr("type"));
  if (device != "cpu") throw Error(name, "on " + device, "posenc runs on the CPU");
  const std::string dtype = py::str(obj.attr("dtype"));
  Tensor t;
  bool known = false;
  for (const auto& d : kDTypes)
    if (dtype == d.torch) t.dtype = d.dtype, known = true;
  if (!known) throw Error(name, dtype, "has no posenc dtype (f32, f64, bf16, f16, i32, i64)");
  if (py::cast<bool>(obj.attr("is_conj")()) || py::cast<bool>(obj.attr("is_neg")()))
    throw Error(name, "a lazy conj/neg view", "resolve it first (resolve_conj, resolve_neg)");
  const auto shape = py::cast<std::vector<int64_t>>(obj.attr("shape"));
  const auto strides = py::cast<std::vector<int64_t>>(obj.attr("stride")());
  set_rank(t, shape.size(), name);
  for (int d = 0; d < t.rank; ++d) t.shape[d] = shape[d], t.strides[d] = strides[d];
  t.data = reinterpret_cast<void*>(py::cast<uintptr_t>(obj.attr("data_ptr")()));
  return t;
}

Tensor numpy_array(const py::array& a, const std::string& name, bool output) {
  const py::dtype dt = a.dtype();
  const std::string dtype = py::str(dt.attr("name"));
  Tensor t;
  bool known = false;
  for (const auto& d : kDTypes)
    if (dtype == d.numpy && d.dtype != DType::bf16) t.dtype = d.dtype, known = true;
  if (!known || !py::cast<bool>(dt.attr("isnative")))
    throw Error(name, "numpy " + py::str(py::handle(dt)).cast<std::string>(),
                "has no posenc dtype (float32, float64, float16, int32, int64; bf16 through "
                "torch.bfloat16)");
  if (output && !a.writeable()) throw Error(name, "read-only", "an output must be writable");
  set_rank(t, a.ndim(), name);
  const int64_t size = static_cast<int64_t>(dtype_size(t.dtype));
  for (int d = 0; d < t.rank; ++d) {
    t.shape[d] = a.shape(d);
    if (a.strides(d) % size != 0)
      throw Error(fmt::format("{}.strides[{}]", name, d), fmt::format("{} bytes", a.strides(d)),
                  fmt::format("must be whole elements of {} bytes", size));
    t.strides[d] = a.strides(d) / size;
  }
  t.data = const_cast<void*>(a.data());
  return t;
}

}  // namespace

Tensor tensor_of(py::handle obj, const std::string& name, bool output) {
  if (py::isinstance<py::array>(obj))
    return numpy_array(py::reinterpret_borrow<py::array>(obj), name, output);
  const py::object torch = torch_module();
  if (!torch.is_none() && py::isinstance(obj, torch.attr("Tensor"))) return torch_tensor(obj, name);
  throw Error(name, type_name(obj), "must be a numpy.ndarray or a torch.Tensor");
}

py::object array_of(const Tensor& t, const std::string& name, Arrays arrays) {
  if (t.rank < 0 || t.rank > kMaxRank) throw Error(name, fmt::format("rank {}", t.rank), "");
  std::vector<py::ssize_t> shape, strides;
  bool empty = false;
  for (int d = 0; d < t.rank; ++d) {
    shape.push_back(t.shape[d]);
    strides.push_back(t.strides[d] * static_cast<int64_t>(dtype_size(t.dtype)));
    empty |= t.shape[d] <= 0;
    if (t.shape[d] < 0)
      throw Error(fmt::format("{}.shape[{}]", name, d), std::to_string(t.shape[d]),
                  "a Python array has no negative sizes");
    if (arrays == Arrays::torch && t.strides[d] < 0)
      throw Error(fmt::format("{}.strides[{}]", name, d), std::to_string(t.strides[d]),
                  "must be >= 0: a torch.Tensor has no negative strides");
  }
  if (t.data == nullptr && !empty)
    throw Error(name + ".data", "null", "a Python array cannot view address 0");
  if (arrays == Arrays::numpy && t.dtype == DType::bf16)
    throw Error(name, "bf16", "numpy has no bfloat16: check with arrays=\"torch\"");
  const auto& names = names_of(t.dtype);
  // With a base object the array views t.data instead of copying it; it never frees it.
  py::array a(py::dtype(names.numpy), shape, strides, t.data, py::str("posenc arena"));
  if (arrays == Arrays::numpy) return a;
  py::object tensor = py::module_::import("torch").attr("from_numpy")(a);
  if (t.dtype == DType::bf16) tensor = tensor.attr("view")(torch_module().attr("bfloat16"));
  return tensor;
}

}  // namespace posenc::python
