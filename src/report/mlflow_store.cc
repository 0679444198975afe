#include "report/mlflow_store.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "base/atomic_file.h"

namespace trainprof::report::mlflow_store {

namespace fs = std::filesystem;

namespace {

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

}  // namespace

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string Join(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

bool IsLiveRun(const std::string& run_folder) {
  std::error_code ec;
  return fs::exists(Join(Join(run_folder, "tags"), kLiveTag), ec);
}

Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && fs::is_directory(dir, ec)) return Status::Ok();
  return PermissionDenied(fmt::format("cannot create MLflow store folder {}: {}", dir,
                                      ec ? ec.message() : "not a folder"));
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

std::string UserName() {
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') return user;
  const passwd* pw = getpwuid(geteuid());
  return pw != nullptr ? pw->pw_name : "unknown";
}

Status WriteRunMeta(const std::string& run_dir, const RunMeta& m) {
  return base::WriteFileAtomically(
      Join(run_dir, "meta.yaml"),
      fmt::format("artifact_uri: {}\nend_time: {}\nentry_point_name: ''\nexperiment_id: {}\n"
                  "lifecycle_stage: active\nrun_id: {}\nrun_name: {}\nrun_uuid: {}\n"
                  "source_name: ''\nsource_type: {}\nsource_version: ''\nstart_time: {}\n"
                  "status: {}\ntags: []\nuser_id: {}\n",
                  Quoted(FileUri(m.artifact_dir)),
                  m.end_ms < 0 ? std::string("null") : std::to_string(m.end_ms),
                  Quoted(m.experiment_id), Quoted(m.id), Quoted(m.name), Quoted(m.id),
                  kSourceTypeLocal, m.start_ms, m.status, Quoted(UserName())));
}

}  // namespace trainprof::report::mlflow_store
