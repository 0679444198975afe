// A finished run written into an MLflow file store ("mlruns"), as MLflow 3.x's FileStore reads
// it, so `mlflow ui --backend-store-uri mlruns` lists trainprof runs beside training runs:
//
//   <store>/<experiment id>/meta.yaml                 the experiment (found by name, or made)
//   <store>/<experiment id>/<run id>/meta.yaml        the run: FINISHED, start/end from the report
//   <store>/<experiment id>/<run id>/metrics/<key>    "<timestamp ms> <value> <step>" per line
//   <store>/<experiment id>/<run id>/params/<key>     the config, one dotted key per file
//   <store>/<experiment id>/<run id>/tags/<key>       mlflow.runName, trainprof.kind, ...
//   <store>/<experiment id>/<run id>/artifacts/       the run folder's report files
//
//   report::MlflowTarget target{.store = "mlruns"};
//   TRAINPROF_ASSIGN_OR_RETURN(std::string run_id, report::WriteMlflowRun(r, run_dir, target));
//
// Metrics: every numeric headline metric as <section>.<key> at step 0, and training_rate /
// validation_rate (samples/s) per step. The store is only appended to: other experiments and runs
// are left as they are, and a new store gets MLflow's Default experiment (0) as MLflow makes it.
#pragma once

#include <string>

#include "report/report.h"
#include "report/run_writer.h"
#include "trainprof/status.h"

namespace trainprof::report {

struct MlflowTarget {
  std::string store;       // the MLflow file store root ("mlruns"); created when missing
  std::string experiment;  // experiment name; empty: the run's name (output.name, else the title)
  bool replace = false;    // a run already exported into this store is refused unless set
};

// Writes `r` (and the report files of `run_dir`, copied under artifacts/; none when `run_dir` is
// empty) as one run of the experiment named by `t`, reused when the store has it, else made with
// the next free numeric id. Returns the run id: 32 hex digits derived from the run folder and
// created_utc, so the same run exported twice is recognised; the live run of the same run
// (live/mlflow_live.h) is taken over, its metrics kept. Errors name the file or folder: the
// store cannot be created or written; an experiment's meta.yaml cannot be parsed; `run_dir` is
// not a folder; the run is already in the store (FailedPrecondition) and `t.replace` is off.
StatusOr<std::string> WriteMlflowRun(const Report& r, const std::string& run_dir,
                                     const MlflowTarget& t);

// The run-folder writer (report/run_writers.h): output.mlflow, output.mlflow_experiment.
Status ExportToMlflow(const RunFiles& f);

// The run id WriteMlflowRun gives `r`: a hash of its run folder (meta run_dir, else `run_dir`),
// created_utc and kind, as 32 lowercase hex digits.
std::string MlflowRunId(const Report& r, const std::string& run_dir);
// The same from its parts: the run folder, created_utc (ISO 8601) and the report's kind.
std::string MlflowRunIdFor(const std::string& run_folder, const std::string& created_utc,
                           const std::string& kind);

}  // namespace trainprof::report
