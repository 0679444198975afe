#include "live/mlflow_live.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

namespace trainprof::live {

using namespace report::mlflow_store;  // NOLINT: the store's helpers

StatusOr<std::unique_ptr<MlflowLiveRun>> MlflowLiveRun::Begin(const report::MlflowTarget& t,
                                                              const std::string& run_id,
                                                              const std::string& run_name,
                                                              int64_t start_ms,
                                                              const std::string& experiment) {
  TRAINPROF_RETURN_IF_ERROR(OpenStore(t.store));
  auto run = std::unique_ptr<MlflowLiveRun>(new MlflowLiveRun());
  TRAINPROF_ASSIGN_OR_RETURN(run->meta_.experiment_id, FindOrMakeExperiment(t.store, experiment));
  run->dir_ = Join(Join(t.store, run->meta_.experiment_id), run_id);
  run->meta_.id = run_id;
  run->meta_.name = run_name;
  run->meta_.artifact_dir = Join(run->dir_, "artifacts");
  run->meta_.start_ms = start_ms;
  run->meta_.status = kStatusRunning;
  const std::string tags = Join(run->dir_, "tags");
  TRAINPROF_RETURN_IF_ERROR(MakeDirs(Join(run->dir_, "metrics")));
  TRAINPROF_RETURN_IF_ERROR(MakeDirs(run->meta_.artifact_dir));
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"mlflow.runName", run_name},
                                   {"mlflow.source.name", "trainprof"},
                                   {"mlflow.source.type", "LOCAL"},
                                   {"mlflow.user", UserName()},
                                   {kLiveTag, "1"}})
    TRAINPROF_RETURN_IF_ERROR(WriteFile(tags, key, value));
  TRAINPROF_RETURN_IF_ERROR(WriteRunMeta(run->dir_, run->meta_));
  return run;
}

Status MlflowLiveRun::Log(int64_t step, int64_t timestamp_ms,
                          const std::vector<std::pair<std::string, double>>& scalars) {
  for (const auto& [key, value] : scalars) {
    const std::string path = Join(Join(dir_, "metrics"), SafeKey(key));
    std::FILE* f = std::fopen(path.c_str(), "a");
    if (f == nullptr) return PermissionDenied(fmt::format("cannot append to {}", path));
    const std::string line = MetricLine(timestamp_ms, value, step);
    const bool ok = std::fputs(line.c_str(), f) >= 0;
    if (std::fclose(f) != 0 || !ok) return PermissionDenied(fmt::format("cannot write {}", path));
  }
  return Status::Ok();
}

Status MlflowLiveRun::End(bool failed, int64_t end_ms) {
  meta_.status = failed ? kStatusFailed : kStatusFinished;
  meta_.end_ms = end_ms;
  return WriteRunMeta(dir_, meta_);
}

}  // namespace trainprof::live
