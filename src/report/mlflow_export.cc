#include "report/mlflow_export.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/atomic_file.h"
#include "report/format.h"
#include "report/mlflow_store.h"
#include "report/tensorboard_export.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;
using namespace mlflow_store;  // NOLINT: the store's helpers

constexpr size_t kMaxParamChars = 6000;  // MLflow's limit on a param value

// The run folder as the report names it (meta run_dir), else `run_dir`.
std::string RunFolder(const Report& r, const std::string& run_dir) {
  const std::string meta = MetaText(r, "run_dir");
  return meta.empty() ? run_dir : meta;
}

// --- The run's files. ---

struct RunInfo {
  std::string id, experiment_id, name, dir;  // dir: where the files are written (staged)
  int64_t start_ms = 0, end_ms = 0;
};

// speed.<stage>_rate's samples/s per step, as metric <stage>_rate.
Status WriteRateMetric(const Report& r, const std::string& stage, const RunInfo& run) {
  const Table* t = r.FindTable("speed", stage + "_rate");
  if (t == nullptr) return Status::Ok();
  const int step = t->ColumnIndex("step"), time = t->ColumnIndex("time_s"),
            samples = t->ColumnIndex("samples_per_s");
  if (samples < 0) return Status::Ok();
  std::string lines;
  for (size_t i = 0; i < t->rows.size(); ++i) {
    auto cell = [&](int c) { return c < 0 ? NAN : AsNumber(t->rows[i][c]); };
    if (!std::isfinite(cell(samples))) continue;
    const double at = cell(time), n = cell(step);
    lines +=
        MetricLine(run.start_ms + (std::isfinite(at) ? std::llround(at * 1000) : 0), cell(samples),
                   std::isfinite(n) ? std::llround(n) : static_cast<int64_t>(i));
  }
  return lines.empty() ? Status::Ok() : WriteFile(Join(run.dir, "metrics"), stage + "_rate", lines);
}

Status WriteMetrics(const Report& r, const RunInfo& run) {
  for (const Section& s : r.sections) {
    for (const Metric& m : s.metrics) {
      if (!std::holds_alternative<int64_t>(m.value) && !std::holds_alternative<double>(m.value))
        continue;
      TRAINPROF_RETURN_IF_ERROR(WriteFile(Join(run.dir, "metrics"), s.id + "." + m.key,
                                          MetricLine(run.start_ms, AsNumber(m.value), 0)));
    }
  }
  TRAINPROF_RETURN_IF_ERROR(WriteRateMetric(r, "training", run));
  return WriteRateMetric(r, "validation", run);
}

// At most kMaxParamChars bytes, not cutting a UTF-8 sequence.
std::string ParamValue(const Value& v) {
  std::string text = FormatMachine(v);
  if (text.size() <= kMaxParamChars) return text;
  size_t cut = kMaxParamChars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

Status WriteParams(const Report& r, const RunInfo& run) {
  for (const auto& [key, value] : r.config)
    TRAINPROF_RETURN_IF_ERROR(WriteFile(Join(run.dir, "params"), key, ParamValue(value)));
  return Status::Ok();
}

Status WriteTags(const Report& r, const std::string& run_dir, const RunInfo& run) {
  const std::string dir = Join(run.dir, "tags");
  for (const auto& [key, value] :
       std::map<std::string, std::string>{{"mlflow.runName", run.name},
                                          {"mlflow.source.name", "trainprof"},
                                          {"mlflow.source.type", "LOCAL"},
                                          {"mlflow.user", UserName()},
                                          {"trainprof.kind", r.kind},
                                          {"trainprof.run_dir", RunFolder(r, run_dir)}}) {
    TRAINPROF_RETURN_IF_ERROR(WriteFile(dir, key, value));
  }
  return Status::Ok();
}

bool IsReportFile(const std::string& name) {
  static const std::vector<std::string> kNames = {"report.json", "summary.txt",
                                                  "report.html", "model_summary.txt",
                                                  "trace.json",  "trace.json.gz"};
  return name.ends_with(".csv") || name.ends_with(".trace.json") ||
         std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

// The report files at the top of `run_dir` (not its sub-folders), copied into artifacts/.
Status CopyArtifacts(const std::string& run_dir, const RunInfo& run) {
  const std::string dir = Join(run.dir, "artifacts");
  TRAINPROF_RETURN_IF_ERROR(MakeDirs(dir));
  std::error_code ec;
  if (run_dir.empty()) return Status::Ok();
  if (!fs::is_directory(run_dir, ec))
    return NotFound(fmt::format("run folder {} not found", run_dir));
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file(ec) || !IsReportFile(name)) continue;
    fs::copy_file(e.path(), Join(dir, name), fs::copy_options::overwrite_existing, ec);
    if (ec)
      return PermissionDenied(
          fmt::format("cannot copy {} into {}: {}", e.path().string(), dir, ec.message()));
  }
  return Status::Ok();
}

Status WriteRunMeta(const Report& r, const RunInfo& run, const std::string& final_dir) {
  const bool failed = !MetaText(r, "stopped_by").empty();
  return mlflow_store::WriteRunMeta(
      run.dir, {run.id, run.experiment_id, run.name, Join(final_dir, "artifacts"), run.start_ms,
                run.end_ms, failed ? kStatusFailed : kStatusFinished});
}

// The run's wall time in seconds: meta wall_time_s, else the time section's metric; 0 if none.
double WallSeconds(const Report& r) {
  if (const Value* v = r.FindMeta("wall_time_s"); v != nullptr && std::isfinite(AsNumber(*v)))
    return AsNumber(*v);
  const Section* s = r.FindSection("time");
  const Metric* m = s != nullptr ? s->FindMetric("wall_time_s") : nullptr;
  return m != nullptr && std::isfinite(AsNumber(m->value)) ? AsNumber(m->value) : 0;
}

// output.name, else the report's title, else "trainprof".
std::string DefaultName(const Report& r) {
  for (const auto& [key, value] : r.config)
    if (key == "output.name" && !FormatMachine(value).empty()) return FormatMachine(value);
  return r.title.empty() ? "trainprof" : r.title;
}

// The run folder's name ("20261125T153634Z-mnist"), else the experiment's name.
std::string RunName(const Report& r, const std::string& run_dir) {
  const std::string base = fs::path(RunFolder(r, run_dir)).lexically_normal().filename().string();
  return !base.empty() && base != "." ? base : DefaultName(r);
}

// Writes the run into `run.dir` (a staging folder), meta.yaml last.
Status WriteRunFolder(const Report& r, const std::string& run_dir, const RunInfo& run,
                      const std::string& final_dir) {
  TRAINPROF_RETURN_IF_ERROR(WriteMetrics(r, run));
  TRAINPROF_RETURN_IF_ERROR(WriteParams(r, run));
  TRAINPROF_RETURN_IF_ERROR(WriteTags(r, run_dir, run));
  TRAINPROF_RETURN_IF_ERROR(CopyArtifacts(run_dir, run));
  return WriteRunMeta(r, run, final_dir);
}

// Moves the staged run to `final_dir`, over the earlier export of the same run (if any).
Status Publish(const std::string& stage, const std::string& earlier, const std::string& final_dir) {
  std::error_code ec;
  if (!earlier.empty()) fs::remove_all(earlier, ec);
  if (!ec) fs::rename(stage, final_dir, ec);
  if (!ec) return Status::Ok();
  return PermissionDenied(fmt::format("cannot write MLflow run {}: {}", final_dir, ec.message()));
}

// The metrics the live run wrote that the finished run has not (its own win: they cover the
// whole run), copied into the staged run.
Status KeepLiveMetrics(const std::string& live_dir, const std::string& stage) {
  std::error_code ec;
  const std::string from = Join(live_dir, "metrics"), to = Join(stage, "metrics");
  TRAINPROF_RETURN_IF_ERROR(MakeDirs(to));
  for (const auto& e : fs::directory_iterator(from, ec)) {
    const fs::path dst = fs::path(to) / e.path().filename();
    if (!e.is_regular_file(ec) || fs::exists(dst, ec)) continue;
    fs::copy_file(e.path(), dst, ec);
    if (ec)
      return PermissionDenied(fmt::format("cannot copy {}: {}", e.path().string(), ec.message()));
  }
  return Status::Ok();
}

uint64_t Fnv1a(std::string_view s, uint64_t h) {
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::string MlflowRunId(const Report& r, const std::string& run_dir) {
  return MlflowRunIdFor(RunFolder(r, run_dir), MetaText(r, "created_utc"), r.kind);
}

std::string MlflowRunIdFor(const std::string& run_folder, const std::string& created_utc,
                           const std::string& kind) {
  const std::string key = run_folder + "\n" + created_utc + "\n" + kind;
  const uint64_t a = Fnv1a(key, 0xcbf29ce484222325ull);
  return fmt::format("{:016x}{:016x}", a, Fnv1a(key, a ^ 0x9e3779b97f4a7c15ull));
}

StatusOr<std::string> WriteMlflowRun(const Report& r, const std::string& run_dir,
                                     const MlflowTarget& t) {
  TRAINPROF_RETURN_IF_ERROR(OpenStore(t.store));
  RunInfo run;
  run.id = MlflowRunId(r, run_dir);
  const std::string earlier = FindRunFolder(t.store, run.id);
  const bool live =
      !earlier.empty() && mlflow_store::IsLiveRun(earlier);  // this run, while it trained
  if (!earlier.empty() && !t.replace && !live) {
    return FailedPrecondition(fmt::format(
        "already exported as run {} in {}; --replace to write it again", run.id, t.store));
  }
  TRAINPROF_ASSIGN_OR_RETURN(
      run.experiment_id,
      FindOrMakeExperiment(t.store, t.experiment.empty() ? DefaultName(r) : t.experiment));
  run.name = RunName(r, run_dir);
  const std::optional<double> start = ParseUtcIso8601(MetaText(r, "created_utc"));
  run.start_ms = start ? std::llround(*start * 1000) : NowMs();
  run.end_ms = run.start_ms + std::llround(WallSeconds(r) * 1000);
  const std::string exp_dir = Join(t.store, run.experiment_id);
  run.dir = Join(exp_dir, "." + run.id + ".partial");  // staged: a crash leaves no half run
  std::error_code ec;
  fs::remove_all(run.dir, ec);
  Status written = WriteRunFolder(r, run_dir, run, Join(exp_dir, run.id));
  if (written.ok() && live) written = KeepLiveMetrics(earlier, run.dir);
  if (written.ok()) written = Publish(run.dir, earlier, Join(exp_dir, run.id));
  if (!written.ok()) {
    fs::remove_all(run.dir, ec);
    return written;
  }
  return run.id;
}

Status ExportToMlflow(const RunFiles& f) {
  return WriteMlflowRun(f.report, f.dir, {f.output.mlflow, f.output.mlflow_experiment, f.replace})
      .status();
}

}  // namespace trainprof::report
