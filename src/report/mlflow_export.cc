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
#include "report/tensorboard_export.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxParamChars = 6000;  // MLflow's limit on a param value
constexpr int kSourceTypeLocal = 4;      // mlflow SourceType.LOCAL
constexpr int kStatusFinished = 3;       // mlflow RunStatus.FINISHED

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string Join(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && fs::is_directory(dir, ec)) return Status::Ok();
  return PermissionDenied(fmt::format("cannot create MLflow store folder {}: {}", dir,
                                      ec ? ec.message() : "not a folder"));
}

// The run folder as the report names it (meta run_dir), else `run_dir`.
std::string RunFolder(const Report& r, const std::string& run_dir) {
  const std::string meta = MetaText(r, "run_dir");
  return meta.empty() ? run_dir : meta;
}

// --- YAML, as much as MLflow's meta.yaml files need. ---

// A single-quoted YAML scalar: quotes doubled, control characters (no line breaks) as spaces.
std::string Quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out.push_back('\'');
    out.push_back(static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
  }
  return out + "'";
}

// The value of a scalar as PyYAML writes it: plain, 'single' quoted ('' for a quote) or
// "double" quoted (backslash escapes).
std::string Unquoted(std::string_view v) {
  const char q = v.size() >= 2 && v.front() == v.back() ? v.front() : '\0';
  if (q != '\'' && q != '"') return std::string(v.substr(0, std::min(v.size(), v.find(" #"))));
  std::string out;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    const bool escape = q == '"' ? v[i] == '\\' : v[i] == '\'' && v[i + 1] == '\'';
    if (escape && i + 2 < v.size()) ++i;
    out.push_back(q == '"' && escape && v[i] == 'n' ? '\n' : v[i]);
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  const size_t from = s.find_first_not_of(" \t\r");
  return from == std::string_view::npos ? ""
                                        : s.substr(from, s.find_last_not_of(" \t\r") + 1 - from);
}

// The top-level `key: value` pairs of a YAML mapping; a line folded onto the next lines (indented)
// is joined again. Errors name the file and line.
StatusOr<std::map<std::string, std::string>> ReadYamlMap(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(std::string text, base::ReadFile(path, "MLflow meta file"));
  std::map<std::string, std::string> raw;
  std::string* last = nullptr;
  size_t line_no = 0;
  for (size_t from = 0; from < text.size(); ++line_no) {
    const size_t nl = std::min(text.find('\n', from), text.size());
    const std::string_view line(text.data() + from, nl - from);
    from = nl + 1;
    if (Trim(line).empty() || Trim(line).front() == '#') continue;
    if ((line.front() == ' ' || line.front() == '-') && last != nullptr) {
      *last += (last->empty() ? "" : " ") + std::string(Trim(line));
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || line.front() == ' ' ||
        (colon + 1 < line.size() && line[colon + 1] != ' ')) {
      return InvalidArgument(fmt::format(
          "cannot parse MLflow meta file {}: line {} is not `key: value`", path, line_no + 1));
    }
    last = &raw[std::string(line.substr(0, colon))];
    *last = Trim(line.substr(colon + 1));
  }
  for (auto& [key, value] : raw) value = Unquoted(value);
  return raw;
}

// "file:///abs/path", characters outside the URI's unreserved set percent-encoded.
std::string FileUri(const std::string& path) {
  std::error_code ec;
  const std::string abs = fs::absolute(path, ec).lexically_normal().string();
  std::string out = "file://";
  for (unsigned char c : abs) {
    const bool plain =
        std::isalnum(c) || std::string_view("-._~/").find(c) != std::string_view::npos;
    out += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return out;
}

// --- The store and its experiments. ---

// The numeric experiment folders of `dir` (the store, or its .trash).
std::vector<std::string> ExperimentIds(const std::string& dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool digits = !name.empty() && name.size() <= 18 &&
                        name.find_first_not_of("0123456789") == std::string::npos;
    if (digits && e.is_directory(ec)) ids.push_back(name);
  }
  return ids;
}

Status WriteExperimentMeta(const std::string& store, const std::string& id,
                           const std::string& name) {
  const std::string dir = Join(store, id);
  TRAINPROF_RETURN_IF_ERROR(MakeDirs(dir));
  const int64_t now = NowMs();
  return base::WriteFileAtomically(
      Join(dir, "meta.yaml"),
      fmt::format("artifact_location: {}\ncreation_time: {}\nexperiment_id: {}\n"
                  "last_update_time: {}\nlifecycle_stage: active\nname: {}\n",
                  Quoted(FileUri(dir)), now, Quoted(id), now, Quoted(name)));
}

// Creates a missing store as MLflow does: the root, .trash and the Default experiment (0).
Status OpenStore(const std::string& store) {
  std::error_code ec;
  const bool fresh = !fs::exists(store, ec);
  TRAINPROF_RETURN_IF_ERROR(MakeDirs(Join(store, ".trash")));
  return fresh ? WriteExperimentMeta(store, "0", "Default") : Status::Ok();
}

// The id of the active experiment named `name`, made (the next free number, never 0) if none.
StatusOr<std::string> FindOrMakeExperiment(const std::string& store, const std::string& name) {
  long long highest = 0;
  for (const std::string& id : ExperimentIds(store)) {
    highest = std::max(highest, std::stoll(id));
    const std::string meta = Join(Join(store, id), "meta.yaml");
    std::error_code ec;
    if (!fs::exists(meta, ec)) continue;  // not an experiment MLflow can read either
    TRAINPROF_ASSIGN_OR_RETURN(auto keys, ReadYamlMap(meta));
    if (!keys.contains("name") || !keys.contains("experiment_id")) {
      return InvalidArgument(
          fmt::format("cannot parse MLflow meta file {}: no name or experiment_id", meta));
    }
    if (keys["name"] == name && keys["lifecycle_stage"] != "deleted") return id;
  }
  for (const std::string& id : ExperimentIds(Join(store, ".trash")))
    highest = std::max(highest, std::stoll(id));  // a deleted experiment keeps its number
  const std::string id = std::to_string(highest + 1);
  TRAINPROF_RETURN_IF_ERROR(WriteExperimentMeta(store, id, name));
  return id;
}

// The folder of run `run_id` in any experiment of the store (active or deleted), or "".
std::string FindRunFolder(const std::string& store, const std::string& run_id) {
  std::error_code ec;
  for (const std::string& parent : {store, Join(store, ".trash")}) {
    for (const std::string& id : ExperimentIds(parent)) {
      const std::string dir = Join(Join(parent, id), run_id);
      if (fs::is_directory(dir, ec)) return dir;
    }
  }
  return "";
}

// --- The run's files. ---

struct RunInfo {
  std::string id, experiment_id, name, dir;  // dir: where the files are written (staged)
  int64_t start_ms = 0, end_ms = 0;
};

// `key` as MLflow accepts a metric, param or tag name: '/' as '.', other odd characters as '_'.
std::string SafeKey(std::string key) {
  for (char& c : key) {
    if (c == '/')
      c = '.';
    else if (!std::isalnum(static_cast<unsigned char>(c)) &&
             std::string_view("_-. :").find(c) == std::string_view::npos)
      c = '_';
  }
  return key.find_first_not_of('.') == std::string::npos ? "_" + key : key;
}

Status WriteFile(const std::string& dir, const std::string& name, std::string_view text) {
  TRAINPROF_RETURN_IF_ERROR(MakeDirs(dir));
  return base::WriteFileAtomically(Join(dir, SafeKey(name)), text);
}

// "<timestamp ms> <value> <step>", the value in its shortest exact form.
std::string MetricLine(int64_t timestamp_ms, double value, int64_t step) {
  return fmt::format("{} {} {}\n", timestamp_ms, value, step);
}

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

std::string UserName() {
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') return user;
  const passwd* pw = getpwuid(geteuid());
  return pw != nullptr ? pw->pw_name : "unknown";
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

Status WriteRunMeta(const RunInfo& run, const std::string& final_dir) {
  return base::WriteFileAtomically(
      Join(run.dir, "meta.yaml"),
      fmt::format("artifact_uri: {}\nend_time: {}\nentry_point_name: ''\nexperiment_id: {}\n"
                  "lifecycle_stage: active\nrun_id: {}\nrun_name: {}\nrun_uuid: {}\n"
                  "source_name: ''\nsource_type: {}\nsource_version: ''\nstart_time: {}\n"
                  "status: {}\ntags: []\nuser_id: {}\n",
                  Quoted(FileUri(Join(final_dir, "artifacts"))), run.end_ms,
                  Quoted(run.experiment_id), Quoted(run.id), Quoted(run.name), Quoted(run.id),
                  kSourceTypeLocal, run.start_ms, kStatusFinished, Quoted(UserName())));
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
  return WriteRunMeta(run, final_dir);
}

// Moves the staged run to `final_dir`, over the earlier export of the same run (if any).
Status Publish(const std::string& stage, const std::string& earlier, const std::string& final_dir) {
  std::error_code ec;
  if (!earlier.empty()) fs::remove_all(earlier, ec);
  if (!ec) fs::rename(stage, final_dir, ec);
  if (!ec) return Status::Ok();
  return PermissionDenied(fmt::format("cannot write MLflow run {}: {}", final_dir, ec.message()));
}

uint64_t Fnv1a(std::string_view s, uint64_t h) {
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::string MlflowRunId(const Report& r, const std::string& run_dir) {
  const std::string key = RunFolder(r, run_dir) + "\n" + MetaText(r, "created_utc") + "\n" + r.kind;
  const uint64_t a = Fnv1a(key, 0xcbf29ce484222325ull);
  return fmt::format("{:016x}{:016x}", a, Fnv1a(key, a ^ 0x9e3779b97f4a7c15ull));
}

StatusOr<std::string> WriteMlflowRun(const Report& r, const std::string& run_dir,
                                     const MlflowTarget& t) {
  TRAINPROF_RETURN_IF_ERROR(OpenStore(t.store));
  RunInfo run;
  run.id = MlflowRunId(r, run_dir);
  const std::string earlier = FindRunFolder(t.store, run.id);
  if (!earlier.empty() && !t.replace) {
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
