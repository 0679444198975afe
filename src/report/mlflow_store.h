// The MLflow file store ("mlruns") as MLflow 3.x's FileStore lays it out: its folders,
// meta.yaml files and metric lines, shared by the finished-run export (report/mlflow_export.h)
// and the live run (live/mlflow_live.h).
//
//   TRAINPROF_RETURN_IF_ERROR(mlflow_store::OpenStore("mlruns"));
//   auto id = mlflow_store::FindOrMakeExperiment("mlruns", "mnist");
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "trainprof/status.h"

namespace trainprof::report::mlflow_store {

constexpr int kSourceTypeLocal = 4;  // mlflow SourceType.LOCAL
constexpr int kStatusRunning = 1;    // mlflow RunStatus.RUNNING
constexpr int kStatusFinished = 3;   // mlflow RunStatus.FINISHED
constexpr int kStatusFailed = 4;     // mlflow RunStatus.FAILED

// The tag file a run still training carries (MlflowLiveRun); WriteMlflowRun takes such a run
// over.
constexpr const char* kLiveTag = "trainprof.live";

// True when `run_folder` is a live run (made by MlflowLiveRun).
bool IsLiveRun(const std::string& run_folder);

int64_t NowMs();
std::string Join(const std::string& dir, const std::string& name);
// Errors: the folder cannot be made (names it).
Status MakeDirs(const std::string& dir);
// A single-quoted YAML scalar.
std::string Quoted(std::string_view s);
// The top-level `key: value` pairs of a meta.yaml. Errors name the file and line.
StatusOr<std::map<std::string, std::string>> ReadYamlMap(const std::string& path);
// "file:///abs/path", percent-encoded.
std::string FileUri(const std::string& path);
// Creates a missing store as MLflow does: the root, .trash and the Default experiment (0).
Status OpenStore(const std::string& store);
// The id of the active experiment named `name`, made (the next free number) if none.
StatusOr<std::string> FindOrMakeExperiment(const std::string& store, const std::string& name);
// The folder of run `run_id` in any experiment of the store (active or deleted), or "".
std::string FindRunFolder(const std::string& store, const std::string& run_id);
// `key` as MLflow accepts a metric, param or tag name: '/' as '.', other odd characters as '_'.
std::string SafeKey(std::string key);
// Writes <dir>/<SafeKey(name)> whole.
Status WriteFile(const std::string& dir, const std::string& name, std::string_view text);
// "<timestamp ms> <value> <step>\n".
std::string MetricLine(int64_t timestamp_ms, double value, int64_t step);
std::string UserName();

// A run's meta.yaml. end_ms < 0: none yet (a RUNNING run).
struct RunMeta {
  std::string id, experiment_id, name, artifact_dir;
  int64_t start_ms = 0, end_ms = -1;
  int status = kStatusFinished;
};
Status WriteRunMeta(const std::string& run_dir, const RunMeta& m);

}  // namespace trainprof::report::mlflow_store
