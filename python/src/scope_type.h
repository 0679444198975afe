// The hot-path types of trainprof._core, in CPython's C API: Scope (what `trainprof.scope`
// returns) and TimedIterator (what `trainprof.timed_iter` iterates with).
//
//   with trainprof._core.Scope("[Model].forward", "forward"): ...
//   for batch in trainprof._core.TimedIterator(loader,
//   "[_TrainingEpochLoop].train_dataloader_next"):
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace trainprof::python {

// Adds Scope, TimedIterator and KINDS (kind name -> number) to `module`. False with a Python
// exception set on failure.
bool AddScopeTypes(PyObject* module);

}  // namespace trainprof::python
