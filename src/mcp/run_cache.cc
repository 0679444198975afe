#include "mcp/run_cache.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "analysis/run/options.h"
#include "mcp/arguments.h"
#include "report/json_reader.h"
#include "trace/input_kind.h"

namespace trainprof::mcp {

namespace fs = std::filesystem;
using analysis::AnalyzeOption;
using analysis::OptionKind;
using analysis::OptionValue;

namespace {

Json OptionSchema(const AnalyzeOption& o) {
  const std::string help(o.help);
  switch (o.kind) {
    case OptionKind::kFlag:
      return {{"type", "boolean"}, {"description", help}};
    case OptionKind::kChoice:
      return {{"type", "string"}, {"enum", o.choices}, {"description", help}};
    case OptionKind::kInt:
      return {{"type", "integer"}, {"minimum", o.min}, {"maximum", o.max}, {"description", help}};
    case OptionKind::kPositive:
      return {{"type", "number"}, {"exclusiveMinimum", 0}, {"description", help}};
    case OptionKind::kFraction:
      return {{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", 1}, {"description", help}};
    case OptionKind::kSeconds:
      return {{"type", "number"}, {"minimum", 0}, {"description", help}};
    case OptionKind::kTexts:
    case OptionKind::kPaths:
      return PathsSchema(help);
    case OptionKind::kOptionalText:
      return {{"anyOf", Json::array({{{"type", "boolean"}}, {{"type", "string"}}})},
              {"description", help}};
  }
  return {};
}

std::vector<std::string> Texts(const Json& v) {
  if (v.is_string()) return {v.get<std::string>()};
  std::vector<std::string> out;
  for (const Json& s : v) out.push_back(s.get<std::string>());
  return out;
}

StatusOr<OptionValue> ValueOf(const AnalyzeOption& o, const Json& v, const ToolContext& ctx) {
  if (o.kind == OptionKind::kPaths) {
    std::vector<std::string> paths;
    for (const std::string& p : Texts(v)) {
      TRAINPROF_ASSIGN_OR_RETURN(std::string resolved, ctx.roots->Resolve(p));
      paths.push_back(std::move(resolved));
    }
    return OptionValue(std::move(paths));
  }
  if (v.is_boolean()) return OptionValue(v.get<bool>());
  if (v.is_number_integer()) return OptionValue(v.get<int64_t>());
  if (v.is_number()) return OptionValue(v.get<double>());
  if (v.is_string()) return OptionValue(v.get<std::string>());
  return OptionValue(Texts(v));
}

// A file's size and time: a cached run is stale when one of them changes.
std::string Stamp(const std::string& input) {
  const std::string file = trace::SplitInputPart(input).first;
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  const auto time = fs::last_write_time(file, ec);
  return fmt::format("{}|{}|{}", input, ec ? 0 : size, time.time_since_epoch().count());
}

// The report.json of a trainprof run folder named by `path`, or "".
std::string RunFolderReport(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec) && fs::path(path).filename() == "report.json") return path;
  const fs::path in_dir = fs::path(path) / "report.json";
  return fs::is_directory(path, ec) && fs::is_regular_file(in_dir, ec) ? in_dir.string() : "";
}

StatusOr<std::unique_ptr<analysis::RunResult>> ReadRunFolder(const std::string& report_json) {
  TRAINPROF_ASSIGN_OR_RETURN(report::Report r, report::ReadReportJson(report_json));
  auto out = std::make_unique<analysis::RunResult>();
  out->report = std::move(r);
  out->files = {report_json};
  return out;
}

// A run with a data error (a trace cut short) is an error unless the call allows it, as
// `trainprof analyze` exits 4 for one: the one line of the first, and how to see the rest.
Status DataErrors(const report::Report& r, bool allowed) {
  if (allowed) return Status::Ok();
  for (const report::Diagnostic& d : r.diagnostics) {
    if (d.severity() != base::DataSeverity::kError) continue;
    return DataLoss(
        fmt::format("{}; the figures of what was read are there with "
                    "allow_data_errors=true",
                    d.message));
  }
  return Status::Ok();
}

}  // namespace

Json RunProperties() {
  Json props = {
      {"path", PathsSchema("A PyTorch profiler trace (.json, .json.gz), a folder of one "
                           "run's rank traces, an Nsight Systems SQLite export, a "
                           "PyTorch memory snapshot (.pickle), or a trainprof run "
                           "folder (read from its report.json); several paths are one "
                           "run's files. Relative paths are taken from the first root.")}};
  for (const AnalyzeOption& o : analysis::AnalyzeOptionList())
    props[std::string(o.keyword)] = OptionSchema(o);
  return props;
}

StatusOr<std::vector<std::string>> RunArguments(const Json& args, const ToolContext& ctx,
                                                analysis::AnalyzeRequest& req) {
  std::vector<std::string> paths;
  for (const std::string& p : Texts(args.at("path"))) {
    TRAINPROF_ASSIGN_OR_RETURN(std::string resolved, ctx.roots->Resolve(p));
    paths.push_back(std::move(resolved));
  }
  if (paths.empty()) return BadCall("path: name a trace, a folder or a run folder");
  for (const auto& [key, value] : args.items()) {
    const AnalyzeOption* o = analysis::FindAnalyzeOption(key);
    if (o == nullptr) continue;
    TRAINPROF_ASSIGN_OR_RETURN(OptionValue v, ValueOf(*o, value, ctx));
    if (Status s = analysis::SetOption(*o, v, req); !s.ok())
      return BadCall(fmt::format("{}: {}", key, s.message()));
  }
  return paths;
}

StatusOr<std::shared_ptr<const AnalyzedRun>> RunCache::Get(const Json& args,
                                                           const ToolContext& ctx) {
  analysis::AnalyzeRequest req;
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<std::string> paths, RunArguments(args, ctx, req));
  const std::string folder_report = paths.size() == 1 ? RunFolderReport(paths[0]) : "";
  analysis::RunInputs in;
  if (folder_report.empty()) {
    TRAINPROF_ASSIGN_OR_RETURN(in, analysis::InputsOfOneRun(paths, "a call reads one run"));
  } else {
    in.files = {folder_report};
  }
  nlohmann::json options = nlohmann::json::object();  // sorted keys: one key per question
  for (const auto& [key, value] : args.items())
    if (analysis::FindAnalyzeOption(key) != nullptr) options[key] = value;
  const std::string key = Line(Json{paths, options.dump()});
  std::vector<std::string> stamps;
  for (const std::string& f : in.files) stamps.push_back(Stamp(f));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key != key || it->stamps != stamps) continue;
      entries_.splice(entries_.begin(), entries_, it);
      TRAINPROF_RETURN_IF_ERROR(DataErrors(it->run->report(), req.allow_data_errors));
      return entries_.front().run;
    }
  }
  auto run = std::make_shared<AnalyzedRun>();
  run->paths = paths;
  run->run_folder = !folder_report.empty();
  if (run->run_folder) {
    TRAINPROF_ASSIGN_OR_RETURN(run->result, ReadRunFolder(folder_report));
  } else {
    analysis::RunHooks hooks;
    hooks.progress = ctx.progress;
    hooks.cancelled = ctx.cancelled;
    TRAINPROF_ASSIGN_OR_RETURN(run->result, analysis::AnalyzeRun(in, req, hooks));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++analyses_;
  std::erase_if(entries_, [&](const Entry& e) { return e.key == key; });
  entries_.push_front({key, std::move(stamps), run});
  if (entries_.size() > capacity_) entries_.pop_back();
  TRAINPROF_RETURN_IF_ERROR(DataErrors(run->report(), req.allow_data_errors));
  return std::shared_ptr<const AnalyzedRun>(run);
}

int64_t RunCache::analyses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return analyses_;
}

}  // namespace trainprof::mcp
