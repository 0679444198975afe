// An MLflow run written while the run trains (the live view, issue 57): made RUNNING in the
// file store at the start, its metrics appended at every snapshot (training_rate, step time,
// the system figures), so `mlflow ui` draws them as they grow; the finished export of the same
// run (WriteMlflowRun, same run id) takes it over, keeps the live metrics and sets FINISHED, or
// FAILED when the run was stopped by an error (report meta stopped_by). A run that dies without
// finishing stays RUNNING, as MLflow's own client leaves it.
//
//   auto run = live::MlflowLiveRun::Begin({.store = "mlruns"}, run_id, "20261128T...-mnist",
//                                           start_ms, "mnist");
//   (*run)->Log(step, now_ms, {{"training_rate", 812.5}});
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "report/mlflow_export.h"
#include "report/mlflow_store.h"
#include "trainprof/status.h"

namespace trainprof::live {

class MlflowLiveRun {
 public:
  // Makes the run (RUNNING) in experiment `experiment` of t.store. Errors name the folder.
  static StatusOr<std::unique_ptr<MlflowLiveRun>> Begin(const report::MlflowTarget& t,
                                                        const std::string& run_id,
                                                        const std::string& run_name,
                                                        int64_t start_ms,
                                                        const std::string& experiment);
  // Appends one line per scalar to metrics/<key>. Errors name the file.
  Status Log(int64_t step, int64_t timestamp_ms,
             const std::vector<std::pair<std::string, double>>& scalars);
  // FINISHED or FAILED, with its end time.
  Status End(bool failed, int64_t end_ms);

 private:
  std::string dir_;
  report::mlflow_store::RunMeta meta_;
};

}  // namespace trainprof::live
