#include "cli/run_traces.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "analysis/run/driver.h"
#include "trace/trace_files.h"
#include "trace/trace_merge.h"

namespace trainprof::cli {
namespace {

namespace fs = std::filesystem;

bool IsKinetoTraceName(const std::string& name) {
  return name.ends_with(".pt.trace.json") || name.ends_with(".pt.trace.json.gz");
}

int64_t ModifiedUnixNs(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// Trace files below `dir` written since `since` (sorted); unreadable entries are skipped.
std::vector<std::string> NewTraces(const std::string& dir, int64_t since) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || !IsKinetoTraceName(it->path().filename().string())) continue;
    if (ModifiedUnixNs(it->path().string()) >= since) out.push_back(it->path().string());
  }
  std::ranges::sort(out);
  return out;
}

// A hard link where the file system allows it, else a copy.
std::string KeepInRunFolder(const std::string& file, const std::string& run_dir, size_t i) {
  std::error_code ec;
  const fs::path dest_dir = fs::path(run_dir) / "traces";
  fs::create_directories(dest_dir, ec);
  fs::path dest = dest_dir / fs::path(file).filename();
  if (fs::exists(dest, ec))
    dest = dest_dir / fmt::format("{}-{}", i, fs::path(file).filename().string());
  fs::create_hard_link(file, dest, ec);
  if (ec) fs::copy_file(file, dest, ec);
  return ec ? file : dest.string();
}

void Finding(report::Report& r, report::Severity s, std::string text) {
  report::Section* run = nullptr;
  for (report::Section& sec : r.sections) {
    if (sec.id == "run") run = &sec;
  }
  if (run == nullptr) run = &r.AddSection("run", "Command");
  run->findings.push_back({s, std::move(text)});
}

// The analysis sections of the traces, added to `r`; returns their clock offsets
// (ClockOffsetsByFile).
std::vector<int64_t> AddAnalysis(const std::vector<std::string>& files, const std::string& dir,
                                 report::Report& r) {
  analysis::RunInputs in;
  in.files = files;
  in.skip_unreadable = true;
  const analysis::AnalyzeRequest req;  // analyze's defaults
  std::vector<std::string> skipped;
  auto run = analysis::LoadRun(in, req, {}, /*merge_processes=*/true, &skipped);
  for (const std::string& why : skipped)
    Finding(r, report::Severity::kWarning, fmt::format("a trace was left out: {}", why));
  if (!run.ok()) {
    Finding(r, report::Severity::kError,
            fmt::format("the traces in {} could not be analysed: {}", dir, run.status().message()));
    return {};
  }
  report::AdoptSections(r, analysis::ReportOfLoaded(*run, req, dir), {});
  std::vector<int64_t> offsets = analysis::ClockOffsetsByFile(*run);
  if (std::ranges::any_of(offsets, [](int64_t o) { return o != 0; }))
    Finding(
        r, report::Severity::kInfo,
        "trace.json: each rank's events are moved by its clock offset (the distributed "
        "section's clock_offsets table), so that its collectives line up with the first rank's");
  return offsets;
}

}  // namespace

RunTraces CollectRunTraces(const std::string& dir, int64_t since_unix_ns,
                           const std::string& run_dir, report::Report& r) {
  RunTraces t;
  if (dir.empty()) return t;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    Finding(r, report::Severity::kWarning,
            fmt::format("--traces {}: no such folder after the run, so no profiler trace was "
                        "analysed (does the program write its traces there?)",
                        dir));
    return t;
  }
  const std::vector<std::string> found = NewTraces(dir, since_unix_ns);
  if (found.empty()) {
    Finding(r, report::Severity::kWarning,
            fmt::format("--traces {}: the command wrote no *.pt.trace.json[.gz] there during the "
                        "run, so no profiler trace was analysed",
                        dir));
    return t;
  }
  for (size_t i = 0; i < found.size(); ++i) {
    t.files.push_back(KeepInRunFolder(found[i], run_dir, i));
    r.AddMeta(fmt::format("traces.{}", i), found[i], false);
  }
  t.clock_offsets_ns = AddAnalysis(t.files, dir, r);
  return t;
}

Status WriteRunTrace(const RunTraces& t, std::vector<trace::CounterTrack> counters,
                     int64_t start_unix_ns, const Options& o, const std::string& run_dir) {
  if (!o.output.trace) return Status::Ok();
  std::vector<std::string> skipped;  // already findings of the analysis
  trace::MergeInput in;
  in.skipped = &skipped;
  in.traces = t.files;
  in.clock_offsets_ns = t.clock_offsets_ns;
  in.counters = std::move(counters);
  in.counters_origin_unix_ns = start_unix_ns;
  return trace::WriteMergedTrace(in, run_dir + "/trace.json");
}

}  // namespace trainprof::cli
