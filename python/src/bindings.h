// The pieces of the trainprof._core module (python/src/module.cc puts them together).
#pragma once

#include <pybind11/pybind11.h>

#include <initializer_list>
#include <string_view>

#include "trainprof/options.h"
#include "trainprof/session.h"
#include "trainprof/status.h"

namespace trainprof::python {

// Raises trainprof.ConfigError (a ValueError) for a config error, trainprof.TrainprofError (a
// RuntimeError) for any other; does nothing for Ok.
void ThrowIfError(const Status& s, bool config);

void AddSessionBinding(pybind11::module_& m);
// The C++ Session behind a trainprof._core.Session; raises TypeError for another object.
Session& CoreSession(pybind11::handle session);
// The keys of `o` under `sections` ("output", "live", ...) with their values, as a dict: read
// through the config schema (options_schema.h), so a key is declared once, there.
pybind11::dict OptionKeys(const Options& o, std::initializer_list<std::string_view> sections);
// TorchCollector: what trainprof.torch measured, reported by the C++ core at finish().
void AddTorchBinding(pybind11::module_& m);
// create_run_dir, merge_ranks, record_run, steady_ns: what a multi-rank run and the run
// history need from Python.
void AddRunBinding(pybind11::module_& m);
// analyze, Analysis and TraceError: `trainprof analyze` in-process, for trainprof.analyze and
// trainprof.hta.
void AddAnalysisBinding(pybind11::module_& m);

}  // namespace trainprof::python
