// trainprof._core.Scope and trainprof._core.TimedIterator: the Python hot path, written against
// CPython's C API (not pybind11) because `with trainprof.scope(...)` must cost well under a
// microsecond: the type is called through vectorcall, names are looked up in a dict keyed by
// the str object, and enter / exit do what the C++ Scope does (record/recorder).
#include "python/src/scope_type.h"

#include <string_view>

#include "trainprof/scope.h"

namespace trainprof::python {
namespace {

constexpr int kKinds = 8;  // ActionKind values
// One dict per ActionKind: name (str) -> SourceLocation* (int).
PyObject* g_actions[kKinds] = {};
// "loop" -> 1, ...: the kind names Python code passes.
PyObject* g_kind_names = nullptr;

const SourceLocation* LookupAction(PyObject* name, int kind) {
  PyObject* dict = g_actions[kind];
  PyObject* hit = PyDict_GetItemWithError(dict, name);  // borrowed
  if (hit != nullptr) return static_cast<const SourceLocation*>(PyLong_AsVoidPtr(hit));
  if (PyErr_Occurred()) return nullptr;
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &size);
  if (text == nullptr) return nullptr;
  const SourceLocation* loc =
      InternAction(std::string_view(text, static_cast<size_t>(size)), ActionKind(kind));
  PyObject* ptr = PyLong_FromVoidPtr(const_cast<SourceLocation*>(loc));
  if (ptr == nullptr || PyDict_SetItem(dict, name, ptr) < 0) {
    Py_XDECREF(ptr);
    return nullptr;
  }
  Py_DECREF(ptr);
  return loc;
}

// kind: None, an int (trainprof.Kind) or a name ("loop"). Returns -1 with an exception set.
int ParseKind(PyObject* kind) {
  if (kind == nullptr || kind == Py_None) return 0;
  if (PyLong_Check(kind)) {
    long k = PyLong_AsLong(kind);
    if (k >= 0 && k < kKinds) return static_cast<int>(k);
  } else if (PyUnicode_Check(kind)) {
    PyObject* k = PyDict_GetItemWithError(g_kind_names, kind);
    if (k != nullptr) return static_cast<int>(PyLong_AsLong(k));
    if (PyErr_Occurred()) return -1;
  }
  PyErr_Format(PyExc_ValueError,
               "trainprof.scope: kind must be one of other, loop, dataloader, forward, backward, "
               "optimizer, step, communication (or a trainprof.Kind), got %R",
               kind);
  return -1;
}

// Parses (name, kind=None) from a vectorcall; returns the action or null with an exception.
const SourceLocation* ParseAction(const char* who, PyObject* const* args, Py_ssize_t nargs,
                                  PyObject* kwnames) {
  PyObject* name = nargs > 0 ? args[0] : nullptr;
  PyObject* kind = nargs > 1 ? args[1] : nullptr;
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    PyObject* value = args[nargs + i];
    if (PyUnicode_CompareWithASCIIString(key, "kind") == 0 && kind == nullptr) {
      kind = value;
    } else if (PyUnicode_CompareWithASCIIString(key, "name") == 0 && name == nullptr) {
      name = value;
    } else {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", who, key);
      return nullptr;
    }
  }
  if (nargs > 2 || name == nullptr || !PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "%s(name: str, kind='other'): the action name must be a str",
                 who);
    return nullptr;
  }
  const int k = ParseKind(kind);
  return k < 0 ? nullptr : LookupAction(name, k);
}

// ---- Scope ------------------------------------------------------------------------------------

struct ScopeObject {
  PyObject_HEAD const SourceLocation* loc;
  uint64_t begin;
  uint32_t depth;
  uint32_t cuda;  // its CUDA event pair (time.cuda_events), 0: none
  bool entered;   // between __enter__ and __exit__: a scope serves one `with` at a time
};

PyTypeObject g_scope_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* NewScope(const SourceLocation* loc) {
  ScopeObject* self = PyObject_New(ScopeObject, &g_scope_type);
  if (self == nullptr) return nullptr;
  self->loc = loc;
  self->begin = 0;
  self->depth = 0;
  self->cuda = 0;
  self->entered = false;
  return reinterpret_cast<PyObject*>(self);
}

PyObject* ScopeVectorcall(PyObject*, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const SourceLocation* loc =
      ParseAction("trainprof.scope", args, PyVectorcall_NARGS(nargsf), kwnames);
  return loc == nullptr ? nullptr : NewScope(loc);
}

PyObject* ScopeNew(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  // The tuple form of a call (type(*args, **kw) from C code that does not use vectorcall).
  PyObject* kind = nullptr;
  PyObject* name = nullptr;
  static const char* kw[] = {"name", "kind", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|O:scope", const_cast<char**>(kw), &name,
                                   &kind)) {
    return nullptr;
  }
  const int k = ParseKind(kind);
  if (k < 0) return nullptr;
  const SourceLocation* loc = LookupAction(name, k);
  return loc == nullptr ? nullptr : NewScope(loc);
}

void ScopeDealloc(PyObject* self) { PyObject_Free(self); }

PyObject* ScopeEnter(PyObject* o, PyObject*) {
  auto* self = reinterpret_cast<ScopeObject*>(o);
  if (self->entered) {
    PyErr_Format(PyExc_RuntimeError,
                 "trainprof.scope('%s') is already open: a scope object serves one `with` at a "
                 "time; create one per block",
                 self->loc->name);
    return nullptr;
  }
  self->entered = true;
  if (internal::g_recording.load(std::memory_order_relaxed)) {
    self->depth = internal::t_state.depth++;
    self->cuda =
        internal::g_cuda_events.load(std::memory_order_relaxed) ? internal::CudaMarkBegin() : 0;
    self->begin = internal::Ticks();
  }
  Py_INCREF(o);
  return o;
}

PyObject* ScopeExit(PyObject* o, PyObject* const*, Py_ssize_t) {
  auto* self = reinterpret_cast<ScopeObject*>(o);
  self->entered = false;
  if (self->begin != 0) {
    const uint64_t end = internal::Ticks();
    if (self->cuda != 0) internal::CudaMarkEnd(self->cuda);
    --internal::t_state.depth;
    internal::RecordEvent(self->loc, self->begin, end, self->depth, self->cuda);
    self->begin = 0;
  }
  Py_RETURN_FALSE;  // never swallows the exception that ended the block
}

PyObject* ScopeName(PyObject* o, void*) {
  return PyUnicode_FromString(reinterpret_cast<ScopeObject*>(o)->loc->name);
}

PyObject* ScopeRepr(PyObject* o) {
  const SourceLocation* loc = reinterpret_cast<ScopeObject*>(o)->loc;
  return PyUnicode_FromFormat("trainprof.scope('%s', kind='%s')", loc->name,
                              ActionKindName(loc->kind));
}

PyMethodDef g_scope_methods[] = {
    {"__enter__", ScopeEnter, METH_NOARGS, "Begins the timed block."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(ScopeExit)),
     METH_FASTCALL, "Ends the timed block; exceptions propagate."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef g_scope_getset[] = {{"name", ScopeName, nullptr, "The action name.", nullptr},
                                {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---- TimedIterator ----------------------------------------------------------------------------

struct TimedIteratorObject {
  PyObject_HEAD PyObject* it;
  const SourceLocation* loc;
};

PyTypeObject g_timed_iter_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* TimedIterNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* iterable = nullptr;
  PyObject* name = nullptr;
  PyObject* kind = nullptr;
  static const char* kw[] = {"iterable", "action", "kind", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OU|O:TimedIterator", const_cast<char**>(kw),
                                   &iterable, &name, &kind)) {
    return nullptr;
  }
  const int k = ParseKind(kind);
  if (k < 0) return nullptr;
  const SourceLocation* loc = LookupAction(name, k);
  if (loc == nullptr) return nullptr;
  PyObject* it = PyObject_GetIter(iterable);
  if (it == nullptr) return nullptr;
  auto* self = PyObject_GC_New(TimedIteratorObject, type);
  if (self == nullptr) {
    Py_DECREF(it);
    return nullptr;
  }
  self->it = it;
  self->loc = loc;
  PyObject_GC_Track(self);
  return reinterpret_cast<PyObject*>(self);
}

// Times one next() of the wrapped iterator; the call that ends the iteration is not recorded.
PyObject* TimedIterNext(PyObject* o) {
  auto* self = reinterpret_cast<TimedIteratorObject*>(o);
  if (self->it == nullptr) return nullptr;
  uint64_t begin = 0;
  uint32_t depth = 0;
  if (internal::g_recording.load(std::memory_order_relaxed)) {
    depth = internal::t_state.depth++;
    begin = internal::Ticks();
  }
  PyObject* item = (*Py_TYPE(self->it)->tp_iternext)(self->it);
  if (begin != 0) {
    const uint64_t end = internal::Ticks();
    --internal::t_state.depth;
    if (item != nullptr) internal::RecordEvent(self->loc, begin, end, depth);
  }
  // Exhausted (no exception, or StopIteration): let go of the iterator. Any other exception
  // leaves it, so a loop that catches a loader error can go on.
  if (item == nullptr && (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_StopIteration))) {
    Py_CLEAR(self->it);
  }
  return item;
}

int TimedIterTraverse(PyObject* o, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<TimedIteratorObject*>(o)->it);
  return 0;
}

int TimedIterClear(PyObject* o) {
  Py_CLEAR(reinterpret_cast<TimedIteratorObject*>(o)->it);
  return 0;
}

void TimedIterDealloc(PyObject* o) {
  PyObject_GC_UnTrack(o);
  TimedIterClear(o);
  PyObject_GC_Del(o);
}

bool ReadyTypes() {
  g_scope_type.tp_name = "trainprof._core.Scope";
  g_scope_type.tp_basicsize = sizeof(ScopeObject);
  g_scope_type.tp_flags = Py_TPFLAGS_DEFAULT;
  g_scope_type.tp_doc =
      "scope(name, kind='other'): a context manager that records one timed block of the "
      "action `name` on the calling thread (see trainprof.scope).";
  g_scope_type.tp_new = ScopeNew;
  g_scope_type.tp_vectorcall = ScopeVectorcall;
  g_scope_type.tp_dealloc = ScopeDealloc;
  g_scope_type.tp_repr = ScopeRepr;
  g_scope_type.tp_methods = g_scope_methods;
  g_scope_type.tp_getset = g_scope_getset;

  g_timed_iter_type.tp_name = "trainprof._core.TimedIterator";
  g_timed_iter_type.tp_basicsize = sizeof(TimedIteratorObject);
  g_timed_iter_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  g_timed_iter_type.tp_doc =
      "TimedIterator(iterable, action, kind='dataloader'): an iterator that records every "
      "next() that returns an item as one call of `action`.";
  g_timed_iter_type.tp_new = TimedIterNew;
  g_timed_iter_type.tp_dealloc = TimedIterDealloc;
  g_timed_iter_type.tp_traverse = TimedIterTraverse;
  g_timed_iter_type.tp_clear = TimedIterClear;
  g_timed_iter_type.tp_iter = PyObject_SelfIter;
  g_timed_iter_type.tp_iternext = TimedIterNext;
  return PyType_Ready(&g_scope_type) == 0 && PyType_Ready(&g_timed_iter_type) == 0;
}

bool MakeKindTables() {
  g_kind_names = PyDict_New();
  if (g_kind_names == nullptr) return false;
  for (int k = 0; k < kKinds; ++k) {
    g_actions[k] = PyDict_New();
    PyObject* value = PyLong_FromLong(k);
    if (g_actions[k] == nullptr || value == nullptr ||
        PyDict_SetItemString(g_kind_names, ActionKindName(ActionKind(k)), value) < 0) {
      Py_XDECREF(value);
      return false;
    }
    Py_DECREF(value);
  }
  return true;
}

}  // namespace

bool AddScopeTypes(PyObject* module) {
  if (!MakeKindTables() || !ReadyTypes()) return false;
  Py_INCREF(&g_scope_type);
  Py_INCREF(&g_timed_iter_type);
  Py_INCREF(g_kind_names);
  return PyModule_AddObject(module, "Scope", reinterpret_cast<PyObject*>(&g_scope_type)) == 0 &&
         PyModule_AddObject(module, "TimedIterator",
                            reinterpret_cast<PyObject*>(&g_timed_iter_type)) == 0 &&
         PyModule_AddObject(module, "KINDS", g_kind_names) == 0;
}

}  // namespace trainprof::python
