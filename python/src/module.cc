// trainprof._core: the C++ core under the trainprof Python package. Recording, statistics,
// reports and the run history all run here; python/trainprof/ is the Pythonic surface.
#include <pybind11/pybind11.h>

#include "python/src/bindings.h"
#include "python/src/scope_type.h"
#include "trainprof/version.h"

namespace py = pybind11;

namespace trainprof::python {
namespace {

PyObject* g_config_error = nullptr;
PyObject* g_error = nullptr;

}  // namespace

void ThrowIfError(const Status& s, bool config) {
  if (s.ok()) return;
  const bool bad_input =
      s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound;
  PyErr_SetString(config && bad_input ? g_config_error : g_error, s.message().c_str());
  throw py::error_already_set();
}

}  // namespace trainprof::python

PYBIND11_MODULE(_core, m) {
  using namespace trainprof::python;
  m.doc() = "The C++ core of trainprof (use the trainprof package, not this module).";
  m.attr("__version__") = TRAINPROF_VERSION;
  g_error = PyErr_NewExceptionWithDoc("trainprof.TrainprofError",
                                      "A trainprof operation failed (the message says which file "
                                      "or step).",
                                      PyExc_RuntimeError, nullptr);
  g_config_error = PyErr_NewExceptionWithDoc(
      "trainprof.ConfigError",
      "A bad config file, key or value; the message names the file, line and column or the key, "
      "and the nearest valid key.",
      PyExc_ValueError, nullptr);
  m.attr("TrainprofError") = py::reinterpret_borrow<py::object>(g_error);
  m.attr("ConfigError") = py::reinterpret_borrow<py::object>(g_config_error);
  if (!AddScopeTypes(m.ptr())) throw py::error_already_set();
  AddSessionBinding(m);
  AddRunBinding(m);
  AddTorchBinding(m);
  AddAnalysisBinding(m);
}
