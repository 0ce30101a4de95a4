// posenc._posenc: the registry's kernels on NumPy arrays and torch tensors, and posenc::check on
// Python callables. The package around it (python/posenc/) allocates outputs, names things and
// isolates; everything that decides a verdict or formats a report is the C++ harness's own.
// Over 600 lines: one pybind11 module, whose bindings for every family and for posenc::check share
// its array and tensor conversions.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>

#include "arrays.h"
#include "fields.h"
#include "posenc/error.h"
#include "properties/check.h"
#include "properties/error_by_position.h"
#include "properties/report.h"
#include "properties/validate.h"

namespace posenc::python {

namespace {

using harness::ImplReport;
using harness::PositionBand;
using harness::PropertyResult;

// posenc.Error, the ValueError subclass python/posenc/__init__.py defines and registers.
py::handle error_class;

[[noreturn]] void wrong_type(const char* name, py::handle value, const char* requirement) {
  throw Error(name, py::repr(value), requirement);
}

// ---- Call fields from Python values, and back ----

// An enum field is its name in Python ("half_split"). A value the enum does not name (bad input
// the harness makes) is its integer, both ways, so that the callable sees it and must reject it.
template <class Enum>
Enum enum_of(const char* name, py::handle value) {
  static constexpr auto names = enum_names(Enum{});
  if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value))
    return static_cast<Enum>(py::cast<int>(value));
  if (py::isinstance<py::str>(value)) {
    const std::string s = py::str(value);
    int i = 0;
    for (const char* n : names) {
      if (s == n) return static_cast<Enum>(i);
      ++i;
    }
  }
  std::string allowed;
  for (const char* n : names) allowed += fmt::format("{}'{}'", allowed.empty() ? "" : ", ", n);
  throw Error(name, py::repr(value), "must be one of " + allowed);
}

template <class Enum>
py::object enum_name(Enum value) {
  static constexpr auto names = enum_names(Enum{});
  const auto i = static_cast<size_t>(value);
  if (i < names.size()) return py::str(names[i]);
  return py::int_(i);
}

RopeScaling scaling_of(py::handle value);

void from_python(const char* name, py::handle value, Tensor& field, Role role) {
  field = tensor_of(value, name, role == Role::output);
}
void from_python(const char* name, py::handle value, std::optional<Tensor>& field, Role role) {
  if (value.is_none())
    field.reset();
  else
    field = tensor_of(value, name, role == Role::output);
}
template <class Number>
requires std::is_arithmetic_v<Number>
void from_python(const char* name, py::handle value, Number& field, Role) {
  if constexpr (std::is_same_v<Number, bool>) {
    if (!py::isinstance<py::bool_>(value)) wrong_type(name, value, "must be a bool");
    field = py::cast<bool>(value);
  } else if constexpr (std::is_integral_v<Number>) {
    if (py::isinstance<py::bool_>(value) || !py::isinstance<py::int_>(value))
      wrong_type(name, value, "must be an int");
    try {
      field = py::cast<Number>(value);
    } catch (const py::cast_error&) {
      wrong_type(name, value, "is out of range");
    }
  } else {
    if (py::isinstance<py::bool_>(value) ||
        !(py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value)))
      wrong_type(name, value, "must be a float");
    field = py::cast<Number>(value);
  }
}
template <class Enum>
requires std::is_enum_v<Enum>
void from_python(const char* name, py::handle value, Enum& field, Role) {
  field = enum_of<Enum>(name, value);
}
// mrope_section: a sequence of three ints.
void from_python(const char* name, py::handle value, std::array<int64_t, 3>& field, Role role) {
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value) || py::len(value) != 3)
    wrong_type(name, value, "must be a sequence of 3 ints");
  const auto items = py::reinterpret_borrow<py::sequence>(value);
  for (size_t i = 0; i < 3; ++i) from_python(name, items[i], field[i], role);
}
void from_python(const char*, py::handle value, RopeScaling& field, Role) {
  field = scaling_of(value);
}

// Arrays for a callable: an output that is its input's exact view (in place) is the same object.
struct ArrayCache {
  Arrays arrays;
  std::vector<std::pair<Tensor, py::object>> made;

  py::object get(const Tensor& t, const std::string& name) {
    for (const auto& [view, object] : made)
      if (same_view(view, t)) return object;
    made.emplace_back(t, array_of(t, name, arrays));
    return made.back().second;
  }
};

py::object to_python(const char* name, const Tensor& t, ArrayCache& cache) {
  return cache.get(t, name);
}
py::object to_python(const char* name, const std::optional<Tensor>& t, ArrayCache& cache) {
  return t ? cache.get(*t, name) : py::none();
}
template <class Number>
requires std::is_arithmetic_v<Number> py::object to_python(const char*, Number value, ArrayCache&) {
  return py::cast(value);
}
template <class Enum>
requires std::is_enum_v<Enum> py::object to_python(const char*, Enum value, ArrayCache&) {
  return enum_name(value);
}
py::object to_python(const char*, const std::array<int64_t, 3>& value, ArrayCache&) {
  return py::make_tuple(value[0], value[1], value[2]);
}
py::object to_python(const char*, const RopeScaling& value, ArrayCache&) { return py::cast(value); }

RopeScaling scaling_of(py::handle value) {
  if (py::isinstance<RopeScaling>(value)) return py::cast<RopeScaling>(value);
  if (!py::isinstance<py::dict>(value))
    wrong_type("scaling", value, "must be a posenc.RopeScaling or a dict of its fields");
  RopeScaling s;
  py::object view = py::cast(&s, py::return_value_policy::reference);
  for (auto [key, item] : py::reinterpret_borrow<py::dict>(value)) {
    if (!py::hasattr(view, key)) wrong_type("scaling", key, "is not a field of RopeScaling");
    py::setattr(view, key, item);
  }
  return s;
}

template <class Call>
std::vector<std::string> field_names() {
  std::vector<std::string> names;
  Call call;
  fields(call, [&](const char* name, auto&, Role) { names.push_back(name); });
  return names;
}

// The Call that keyword arguments describe; a field not given keeps the struct's default.
template <class Call>
Call call_of(const py::dict& kwargs) {
  Call call;
  size_t used = 0;
  fields(call, [&](const char* name, auto& field, Role role) {
    if (!kwargs.contains(name)) return;
    ++used;
    from_python(name, kwargs[name], field, role);
  });
  if (used != kwargs.size()) {
    const auto names = field_names<Call>();
    for (auto [key, _] : kwargs)
      if (std::find(names.begin(), names.end(), py::cast<std::string>(key)) == names.end())
        throw py::type_error(fmt::format(
            "{}() got an unexpected keyword argument '{}'; its "
            "arguments are {}",
            family_name(Call::kFamily), py::str(key).cast<std::string>(), fmt::join(names, ", ")));
  }
  return call;
}

template <class Call>
py::dict kwargs_of(Call& call, Arrays arrays) {
  py::dict kwargs;
  ArrayCache cache{arrays, {}};
  fields(call, [&](const char* name, auto& field, Role) {
    kwargs[name] = to_python(name, field, cache);
  });
  return kwargs;
}

template <class Call>
std::vector<std::string> output_names(Call& call) {
  std::vector<std::string> names;
  fields(call, [&](const char* name, auto& field, Role role) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::optional<Tensor>>) {
      if (role == Role::output && field) names.push_back(name);
    } else if constexpr (std::is_same_v<std::decay_t<decltype(field)>, Tensor>) {
      if (role == Role::output) names.push_back(name);
    }
  });
  return names;
}

// Runs f(std::type_identity<Call>{}) for the family named `family`.
template <class F>
void with_family(const std::string& family, F&& f) {
  bool found = false;
  for_each_family([&](auto tag) {
    using Call = typename decltype(tag)::type;
    if (family != family_name(Call::kFamily)) return;
    found = true;
    f(tag);
  });
  if (!found) throw py::value_error("posenc has no family '" + family + "'");
}

// ---- The registry's kernels ----

void run(const std::string& family, const std::string& impl_name, const py::dict& kwargs) {
  with_family(family, [&](auto tag) {
    using Call = typename decltype(tag)::type;
    const Impl<Call>* impl = nullptr;
    for (const auto& i : implementations<Call>())
      if (i.name == impl_name) impl = &i;
    if (!impl) throw py::value_error("posenc has no implementation '" + impl_name + "'");
    const Call call = call_of<Call>(kwargs);
    call.validate();  // every kernel validates too; here the error beats the variant check
    if (!supports(*impl, call))
      throw Error("call", fmt::format("variants {:#x}", call.required_variants() & ~impl->variants),
                  impl->name + " does not implement these variant bits; the reference does");
    py::gil_scoped_release release;  // the arrays stay alive in kwargs
    impl->run(call);
  });
}

std::vector<std::string> implementation_names(const std::string& family) {
  std::vector<std::string> names;
  with_family(family, [&](auto tag) {
    using Call = typename decltype(tag)::type;
    for (const auto& i : implementations<Call>()) names.push_back(i.name);
  });
  return names;
}

// ---- posenc::check on a Python callable ----

// "RuntimeError: message (at kernel.py:44 in my_rope)": where the callable raised it, without
// the rest of the stack (pytest's, posenc's).
std::string describe(const py::error_already_set& e) {
  std::string s = fmt::format("{}: {}", py::str(e.type().attr("__name__")).cast<std::string>(),
                              py::str(e.value()).cast<std::string>());
  if (!e.trace()) return s;
  const py::list frames = py::module_::import("traceback").attr("extract_tb")(e.trace());
  if (frames.empty()) return s;
  const py::object last = frames[frames.size() - 1];
  const std::string file =
      py::module_::import("os.path").attr("basename")(last.attr("filename")).cast<std::string>();
  return s + fmt::format(" (at {}:{} in {})", file, last.attr("lineno").cast<int>(),
                         last.attr("name").cast<std::string>());
}

// A Python exception from the callable as the harness reads it: posenc.Error, or a ValueError
// in posenc's words ("invalid argument A = V: R"), is posenc::Error (a rejection naming its
// argument; another ValueError names none); anything else is the call's failure.
[[noreturn]] void rethrow(const py::error_already_set& e, std::atomic<bool>& interrupted) {
  if (e.matches(PyExc_KeyboardInterrupt)) {
    interrupted = true;
    throw std::runtime_error("interrupted (KeyboardInterrupt)");
  }
  if (error_class && e.matches(error_class)) {
    const py::object v = e.value();
    throw Error(py::str(v.attr("argument")), py::str(v.attr("value")),
                py::str(v.attr("requirement")));
  }
  if (e.matches(PyExc_ValueError)) {
    const std::string message = py::str(e.value());
    const std::string prefix = "invalid argument ";
    const auto eq = message.find(" = "), colon = message.find(": ", eq + 3);
    if (message.starts_with(prefix) && eq != std::string::npos && colon != std::string::npos)
      throw Error(message.substr(prefix.size(), eq - prefix.size()),
                  message.substr(eq + 3, colon - eq - 3), message.substr(colon + 2));
    throw Error("", py::repr(e.value()),
                "a ValueError that names no argument: raise posenc.Error(argument, value, "
                "requirement), or decorate the kernel with @posenc.validated(family)");
  }
  throw std::runtime_error(describe(e));
}

// Outputs a callable returned instead of writing them: copied into the arena's views, once their
// dtype and shape match.
void store_returned(py::object returned, const py::dict& kwargs,
                    const std::vector<std::string>& outputs) {
  py::list values;
  if (py::isinstance<py::tuple>(returned) || py::isinstance<py::list>(returned))
    values = py::list(returned);
  else
    values.append(returned);
  if (values.size() != outputs.size())
    throw std::runtime_error(fmt::format("returned {} value(s); this call has {} output(s): {}",
                                         values.size(), outputs.size(), fmt::join(outputs, ", ")));
  for (size_t i = 0; i < outputs.size(); ++i) {
    py::object target = kwargs[outputs[i].c_str()], value = values[i];
    const auto shape = [](py::handle a) { return py::str(py::tuple(a.attr("shape"))); };
    if (!py::hasattr(value, "shape") || !py::hasattr(value, "dtype") ||
        !value.attr("dtype").equal(target.attr("dtype")) ||
        !py::tuple(value.attr("shape")).equal(py::tuple(target.attr("shape"))))
      throw std::runtime_error(fmt::format(
          "returned {} as {} {}; expected {} {}", outputs[i],
          py::hasattr(value, "dtype")
              ? py::str(value.attr("dtype")).cast<std::string>()
              : py::str(py::type::handle_of(value).attr("__qualname__")).cast<std::string>(),
          py::hasattr(value, "shape") ? shape(value).cast<std::string>() : "",
          py::str(target.attr("dtype")).cast<std::string>(), shape(target).cast<std::string>()));
    if (py::hasattr(target, "copy_"))
      target.attr("copy_")(value);
    else
      py::module_::import("numpy").attr("copyto")(target, value);
  }
}

// The callable as a kernel the harness can run with the GIL released. It outlives this call in
// copies the harness makes without the GIL: a shared_ptr copies without touching Python, and its
// last copy takes the GIL to let go of the callable.
template <class Call>
std::function<void(const Call&)> kernel_of(py::object fn, Arrays arrays,
                                           std::shared_ptr<std::atomic<bool>> interrupted) {
  std::shared_ptr<py::object> callable(new py::object(std::move(fn)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [callable, arrays, interrupted](const Call& c) {
    if (*interrupted) throw std::runtime_error("interrupted (KeyboardInterrupt)");
    py::gil_scoped_acquire gil;
    Call call = c;
    const py::dict kwargs = kwargs_of(call, arrays);
    py::object returned;
    try {
      returned = (*callable)(**kwargs);
    } catch (const py::error_already_set& e) {
      rethrow(e, *interrupted);
    }
    if (!returned.is_none()) store_returned(returned, kwargs, output_names(call));
  };
}

Arrays arrays_of(const std::string& arrays) {
  if (arrays != "numpy" && arrays != "torch")
    throw py::value_error("arrays must be \"numpy\" or \"torch\", not \"" + arrays + "\"");
  return arrays == "torch" ? Arrays::torch : Arrays::numpy;
}

// Runs `body` with the GIL released, then raises KeyboardInterrupt if the callable saw one.
template <class Body>
void without_gil(const std::shared_ptr<std::atomic<bool>>& interrupted, Body&& body) {
  {
    py::gil_scoped_release release;
    body();
  }
  if (*interrupted) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
}

ImplReport check_family(const std::string& family, py::object fn, const std::string& arrays,
                        const check::Options& options) {
  ImplReport report;
  with_family(family, [&](auto tag) {
    using Call = typename decltype(tag)::type;
    auto interrupted = std::make_shared<std::atomic<bool>>(false);
    auto kernel = kernel_of<Call>(std::move(fn), arrays_of(arrays), interrupted);
    without_gil(interrupted, [&] { report = check::run<Call>(kernel, options).report; });
  });
  return report;
}

std::vector<PositionBand> bands_of(const std::string& family, py::object fn,
                                   const std::string& arrays, const check::Options& options) {
  std::vector<PositionBand> bands;
  with_family(family, [&](auto tag) {
    using Call = typename decltype(tag)::type;
    auto interrupted = std::make_shared<std::atomic<bool>>(false);
    const Impl<Call> impl{.name = std::string(family_name(Call::kFamily)) + "/" + options.name,
                          .variants = options.variants,
                          .bound = options.bound,
                          .run = kernel_of<Call>(std::move(fn), arrays_of(arrays), interrupted),
                          .unavailable = nullptr,
                          .threaded = options.threaded};
    without_gil(interrupted, [&] { bands = harness::error_by_position(impl); });
  });
  return bands;
}

// The properties a check with these options runs, as `posenc validate` selects them.
std::vector<std::pair<std::string, std::string>> selected_properties(const std::string& family,
                                                                     const std::string& property,
                                                                     const std::string& reproduce) {
  std::vector<std::pair<std::string, std::string>> names;
  with_family(family, [&](auto tag) {
    using Call = typename decltype(tag)::type;
    harness::ValidateOptions options;
    options.property = property;
    options.run.reproduce = reproduce;
    for (const auto& p : harness::selected_properties<Call>(options))
      names.emplace_back(p.name, p.statement);
  });
  return names;
}

const char* status_name(PropertyResult::Status s) {
  return s == PropertyResult::Status::passed   ? "passed"
         : s == PropertyResult::Status::failed ? "failed"
                                               : "skipped";
}
PropertyResult::Status status_of(const std::string& s) {
  if (s == "passed") return PropertyResult::Status::passed;
  if (s == "failed") return PropertyResult::Status::failed;
  if (s == "skipped") return PropertyResult::Status::skipped;
  throw py::value_error("status must be 'passed', 'failed' or 'skipped', not '" + s + "'");
}

void bind_reports(py::module_& m) {
  py::class_<harness::ClassShare>(m, "ClassShare")
      .def(py::init<>())
      .def_readwrite("tag", &harness::ClassShare::tag)
      .def_readwrite("share", &harness::ClassShare::share)
      .def_readwrite("minimum", &harness::ClassShare::minimum)
      .def(py::pickle(
          [](const harness::ClassShare& c) { return py::make_tuple(c.tag, c.share, c.minimum); },
          [](py::tuple t) {
            return harness::ClassShare{t[0].cast<std::string>(), t[1].cast<double>(),
                                       t[2].cast<double>()};
          }));
  py::class_<PropertyResult>(m, "PropertyResult", "One property's outcome, a row of the report")
      .def(py::init<>())
      .def_readwrite("property", &PropertyResult::property)
      .def_readwrite("statement", &PropertyResult::statement)
      .def_readwrite("impl", &PropertyResult::impl)
      .def_property(
          "status", [](const PropertyResult& r) { return status_name(r.status); },
          [](PropertyResult& r, const std::string& s) { r.status = status_of(s); })
      .def_readwrite("cases", &PropertyResult::cases)
      .def_readwrite("worst", &PropertyResult::worst)
      .def_readwrite("bound", &PropertyResult::bound)
      .def_readwrite("failure", &PropertyResult::failure)
      .def_readwrite("reproduce", &PropertyResult::reproduce)
      .def_readwrite("note", &PropertyResult::note)
      .def_readwrite("cut", &PropertyResult::cut)
      .def_readwrite("replay", &PropertyResult::replay)
      .def_readwrite("seed", &PropertyResult::seed)
      .def_readwrite("classes", &PropertyResult::classes)
      .def_readwrite("seconds", &PropertyResult::seconds)
      .def_property_readonly("failed", &PropertyResult::failed)
      .def("__repr__",
           [](const PropertyResult& r) {
             return fmt::format("<PropertyResult {} {}: {} cases, worst {:g} / {:g}>", r.property,
                                status_name(r.status), r.cases, r.worst, r.bound);
           })
      .def(py::pickle(
          [](const PropertyResult& r) {
            return py::make_tuple(r.property, r.statement, r.impl, status_name(r.status), r.cases,
                                  r.worst, r.bound, r.failure, r.reproduce, r.note, r.cut, r.replay,
                                  r.seed, r.classes, r.seconds);
          },
          [](py::tuple t) {
            PropertyResult r;
            r.property = t[0].cast<std::string>(), r.statement = t[1].cast<std::string>();
            r.impl = t[2].cast<std::string>(), r.status = status_of(t[3].cast<std::string>());
            r.cases = t[4].cast<int64_t>(), r.worst = t[5].cast<double>();
            r.bound = t[6].cast<double>(), r.failure = t[7].cast<std::string>();
            r.reproduce = t[8].cast<std::string>(), r.note = t[9].cast<std::string>();
            r.cut = t[10].cast<std::string>(), r.replay = t[11].cast<std::string>();
            r.seed = t[12].cast<uint64_t>();
            r.classes = t[13].cast<std::vector<harness::ClassShare>>();
            r.seconds = t[14].cast<double>();
            return r;
          }));
  py::class_<PositionBand>(m, "PositionBand", "Worst error over positions in [lo, hi]")
      .def(py::init<>())
      .def_readwrite("lo", &PositionBand::lo)
      .def_readwrite("hi", &PositionBand::hi)
      .def_readwrite("worst", &PositionBand::worst)
      .def_readwrite("ok", &PositionBand::ok)
      .def_readwrite("failure", &PositionBand::failure)
      .def_property_readonly("dtype", [](const PositionBand& b) { return dtype_name(b.dtype); })
      .def(py::pickle(
          [](const PositionBand& b) {
            return py::make_tuple(b.lo, b.hi, b.worst, b.ok, b.failure, static_cast<int>(b.dtype));
          },
          [](py::tuple t) {
            return PositionBand{t[0].cast<int64_t>(),     t[1].cast<int64_t>(),
                                t[2].cast<double>(),      t[3].cast<bool>(),
                                t[4].cast<std::string>(), static_cast<DType>(t[5].cast<int>())};
          }));
  py::class_<ImplReport>(m, "ImplReport", "What `posenc validate` reports for one implementation")
      .def(py::init<>())
      .def_readwrite("family", &ImplReport::family)
      .def_readwrite("impl", &ImplReport::impl)
      .def_readwrite("source", &ImplReport::source)
      .def_readwrite("bound", &ImplReport::bound)
      .def_readwrite("results", &ImplReport::results)
      .def_readwrite("bands", &ImplReport::bands)
      .def_property_readonly("failed", &ImplReport::failed)
      .def("verdict", &ImplReport::verdict)
      .def(
          "count", [](const ImplReport& r, const std::string& s) { return r.count(status_of(s)); },
          py::arg("status"))
      .def(py::pickle(
          [](const ImplReport& r) {
            return py::make_tuple(r.family, r.impl, r.source, r.bound, r.results, r.bands);
          },
          [](py::tuple t) {
            return ImplReport{t[0].cast<std::string>(),
                              t[1].cast<std::string>(),
                              t[2].cast<std::string>(),
                              t[3].cast<double>(),
                              t[4].cast<std::vector<PropertyResult>>(),
                              t[5].cast<std::vector<PositionBand>>()};
          }));

  m.def("format_properties", &harness::format_properties, py::arg("report"));
  m.def("format_summary", &harness::format_summary, py::arg("reports"));
  m.def("failure_report", &harness::failure_report, py::arg("result"), py::arg("replay"));
  m.def("cut_short", &harness::cut_short, py::arg("reports"));
  m.def("cut_summary", &harness::cut_summary, py::arg("reports"));
  // `posenc validate`'s report files: kind is "json", "junit" or "html"; returns "" or why not.
  m.def(
      "write_report",
      [](const std::string& kind, const std::string& path, const std::vector<ImplReport>& reports,
         const std::string& profile, uint64_t seed, int cases, std::optional<double> time_budget,
         double seconds) {
        const harness::RunInfo info{profile, seed, cases, time_budget, seconds};
        if (kind == "json") return harness::write_json(path, reports, info);
        if (kind == "junit") return harness::write_junit(path, reports, info);
        if (kind == "html") return harness::write_html(path, reports, info);
        throw py::value_error("report kind must be json, junit or html");
      },
      py::arg("kind"), py::arg("path"), py::arg("reports"), py::arg("profile"), py::arg("seed"),
      py::arg("cases"), py::arg("time_budget"), py::arg("seconds"));
}

void bind_options(py::module_& m) {
  py::class_<check::Options>(m, "Options", "posenc::check::Options")
      .def_readwrite("name", &check::Options::name)
      .def_readwrite("variants", &check::Options::variants)
      .def_readwrite("bound", &check::Options::bound)
      .def_readwrite("threaded", &check::Options::threaded)
      .def_property(
          "cases", [](const check::Options& o) { return o.run.cases; },
          [](check::Options& o, int cases) { o.run.cases = cases; })
      .def_property(
          "seed", [](const check::Options& o) { return o.run.seed; },
          [](check::Options& o, uint64_t seed) { o.run.seed = seed; })
      .def_property_readonly("profile", [](const check::Options& o) { return o.run.profile; })
      .def_readwrite("property", &check::Options::property)
      .def_readwrite("reproduce", &check::Options::reproduce)
      .def_readwrite("time_budget", &check::Options::time_budget)
      .def(py::pickle(
          [](const check::Options& o) {
            return py::make_tuple(o.name, o.variants, o.bound, o.threaded, o.run.cases, o.run.seed,
                                  o.property, o.reproduce, o.time_budget, o.run.profile);
          },
          [](py::tuple t) {
            check::Options o;
            o.name = t[0].cast<std::string>(), o.variants = t[1].cast<uint64_t>();
            o.bound = t[2].cast<double>(), o.threaded = t[3].cast<bool>();
            o.run.cases = t[4].cast<int>(), o.run.seed = t[5].cast<uint64_t>();
            o.property = t[6].cast<std::string>(), o.reproduce = t[7].cast<std::string>();
            o.time_budget = t[8].cast<std::optional<double>>();
            o.run.profile = t[9].cast<std::string>();
            return o;
          }));
}

void bind_scaling(py::module_& m) {
  py::class_<RopeScaling>(m, "RopeScaling",
                          "A rope scaling (posenc/rope_frequencies.h): "
                          "RopeScaling(kind=\"yarn\", factor=4, original_max_position=4096, ...)")
      .def(py::init([](const py::kwargs& kwargs) { return scaling_of(kwargs); }))
      .def_property(
          "kind", [](const RopeScaling& s) { return enum_name(s.kind); },
          [](RopeScaling& s, py::handle kind) {
            s.kind = enum_of<RopeScalingKind>("scaling.kind", kind);
          })
      .def_readwrite("factor", &RopeScaling::factor)
      .def_readwrite("alpha", &RopeScaling::alpha)
      .def_readwrite("max_position", &RopeScaling::max_position)
      .def_readwrite("original_max_position", &RopeScaling::original_max_position)
      .def_readwrite("seq_len", &RopeScaling::seq_len)
      .def_readwrite("beta_fast", &RopeScaling::beta_fast)
      .def_readwrite("beta_slow", &RopeScaling::beta_slow)
      .def_readwrite("mscale", &RopeScaling::mscale)
      .def_readwrite("mscale_all_dim", &RopeScaling::mscale_all_dim)
      .def_readwrite("truncate", &RopeScaling::truncate)
      .def_readwrite("low_freq_factor", &RopeScaling::low_freq_factor)
      .def_readwrite("high_freq_factor", &RopeScaling::high_freq_factor)
      .def_readwrite("short_factor", &RopeScaling::short_factor)
      .def_readwrite("long_factor", &RopeScaling::long_factor)
      .def_readwrite("attention_factor", &RopeScaling::attention_factor)
      .def("__repr__", [](const RopeScaling& s) { return "RopeScaling(" + s.describe() + ")"; });
}

py::dict variant_bits() {
  py::dict v;
  const auto add = [&](const auto& table) {
    for (const VariantName& row : table) v[row.name] = row.bit;
  };
  add(variant::shared_names);
  add(variant::convention_names);
  for_each_family([&]<class Call>(std::type_identity<Call>) { add(Call::variant_table()); });
  v["all_scalings"] = variant::all_scalings;
  v["all"] = kAllVariants;
  return v;
}

}  // namespace

}  // namespace posenc::python

using namespace posenc;
using namespace posenc::python;

PYBIND11_MODULE(_posenc, m) {
  m.doc() = "posenc's kernels and harness (use the posenc package, not this module)";
  m.def("_set_error_class", [](py::handle cls) { error_class = cls.inc_ref(); });
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      if (!error_class) throw;
      py::object error = error_class(e.argument(), e.value(), e.requirement());
      PyErr_SetObject(error_class.ptr(), error.ptr());
    }
  });

  py::list families;
  for_each_family([&](auto tag) {
    using Call = typename decltype(tag)::type;
    families.append(family_name(Call::kFamily));
  });
  m.attr("families") = families;
  m.attr("variant") = variant_bits();
  m.def(
      "fields",
      [](const std::string& family) {
        std::vector<std::tuple<std::string, std::string>> out;
        with_family(family, [&](auto tag) {
          using Call = typename decltype(tag)::type;
          Call call;
          fields(call, [&](const char* name, auto&, Role role) {
            out.emplace_back(name, role == Role::input    ? "input"
                                   : role == Role::output ? "output"
                                                          : "scalar");
          });
        });
        return out;
      },
      py::arg("family"), "The family's Call fields: (name, 'input' | 'output' | 'scalar')");
  m.def(
      "in_place_of",
      [](const std::string& family) {
        std::map<std::string, std::string> out;
        with_family(family, [&](auto tag) {
          for (const auto& field : decltype(tag)::type::view_table())
            if (field.in_place_of) out[field.name] = field.in_place_of;
        });
        return out;
      },
      py::arg("family"), "The outputs that may be their input's very view: {output: input}");
  m.def("implementations", &implementation_names, py::arg("family"));
  m.def("run", &run, py::arg("family"), py::arg("impl"), py::arg("kwargs"),
        "Runs a registry implementation on the call the keyword arguments describe");
  m.def(
      "validate",
      [](const std::string& family, const py::dict& kwargs) {
        with_family(family, [&](auto tag) {
          using Call = typename decltype(tag)::type;
          call_of<Call>(kwargs).validate();
        });
      },
      py::arg("family"), py::arg("kwargs"));
  bind_scaling(m);
  bind_reports(m);
  bind_options(m);

  m.def(
      "options",
      [](const std::string& name, uint64_t variants, double bound, bool threaded,
         std::optional<int> cases, std::optional<uint64_t> seed, const std::string& property,
         const std::string& reproduce, std::optional<double> time_budget) {
        check::Options o;
        o.name = name, o.variants = variants, o.bound = bound, o.threaded = threaded;
        if (cases) o.run.cases = *cases;
        if (seed) o.run.seed = *seed;
        o.property = property, o.reproduce = reproduce, o.time_budget = time_budget;
        return o;
      },
      py::arg("name"), py::arg("variants"), py::arg("bound"), py::arg("threaded"), py::arg("cases"),
      py::arg("seed"), py::arg("property"), py::arg("reproduce"), py::arg("time_budget"),
      "posenc::check::Options (cases and seed default to RunOptions's)");
  m.def("check", &check_family, py::arg("family"), py::arg("fn"), py::arg("arrays"),
        py::arg("options"), "posenc::check::run<Call> on a Python callable: its report");
  m.def("error_by_position", &bands_of, py::arg("family"), py::arg("fn"), py::arg("arrays"),
        py::arg("options"), "Worst error against position (rope, sinusoidal; else empty)");
  m.def("selected_properties", &selected_properties, py::arg("family"), py::arg("property") = "",
        py::arg("reproduce") = "");
}
