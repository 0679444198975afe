// Run folders, the multi-rank merge and the run history for trainprof's Python package: the
// same functions `trainprof profile` uses (session/run_folder.h, session/rank_merge.h,
// history/run_db.h).
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/clock.h"
#include "history/run_db.h"
#include "python/src/bindings.h"
#include "report/json_reader.h"
#include "report/run_folder.h"
#include "report/run_writers.h"
#include "session/rank_merge.h"

namespace py = pybind11;

namespace trainprof::python {
namespace {

std::string CreateRunDir(const std::string& dir, const std::string& name) {
  Options::Output out;
  out.dir = dir;
  out.name = name;
  auto created = report::CreateRunDir(out, base::WallNowNs());
  ThrowIfError(created.status(), false);
  return *created;
}

// (rank, status, clock offset ns, clock error ns, report.json, trace.json)
using RankTuple = std::tuple<int64_t, std::string, int64_t, int64_t, std::string, std::string>;

// Writes the merged report and trace of a multi-rank run into run_dir; returns the summary.
std::string MergeRanks(int64_t world_size, const std::string& launcher, const std::string& name,
                       const std::string& run_dir, const std::string& clock_method,
                       const std::vector<RankTuple>& ranks,
                       const std::vector<std::pair<int64_t, std::string>>& missing, bool csv,
                       bool trace, const std::map<std::string, std::string>& exporters) {
  session::MergeInput in;
  in.world_size = world_size;
  in.launcher = launcher;
  in.name = name;
  in.run_dir = run_dir;
  in.clock_method = clock_method;
  in.missing = missing;
  for (const auto& [rank, status, offset, error, report, trace_json] : ranks) {
    in.ranks.push_back({rank, status, offset, error, report, trace_json});
  }
  std::string summary;
  Status st;
  {
    py::gil_scoped_release release;
    Options::Output out;
    out.csv = csv;
    out.trace = trace;
    for (const report::ExportKey& k : report::ExportKeys())
      if (auto it = exporters.find(k.key); it != exporters.end()) out.*(k.field) = it->second;
    st = session::WriteMergedRun(in, out, &summary);
  }
  ThrowIfError(st, false);
  return summary;
}

// Adds the run folder's report.json to the history; returns (id, database) or ("", "") when
// the history is off.
std::pair<std::string, std::string> RecordRun(const std::string& run_dir,
                                              const std::string& db_flag) {
  auto r = report::ReadReportJson(run_dir + "/report.json");
  ThrowIfError(r.status(), false);
  std::string path;
  auto rec = history::RecordRun(*r, run_dir, db_flag, &path);
  ThrowIfError(rec.status(), false);
  return {rec->id, rec->id.empty() ? std::string() : path};
}

}  // namespace

void AddRunBinding(py::module_& m) {
  m.def("create_run_dir", &CreateRunDir, py::arg("dir"), py::arg("name"),
        "Creates <dir>/<UTC time>-<name>[-N] and returns it.");
  m.def("merge_ranks", &MergeRanks, py::arg("world_size"), py::arg("launcher"), py::arg("name"),
        py::arg("run_dir"), py::arg("clock_method"), py::arg("ranks"), py::arg("missing"),
        py::arg("csv"), py::arg("trace"),
        py::arg("exporters") = std::map<std::string, std::string>{});
  m.def(
      "exporter_keys",
      [] {
        std::vector<std::string> keys;
        for (const report::ExportKey& k : report::ExportKeys()) keys.emplace_back(k.key);
        return keys;
      },
      "The output.* keys of the exporters (MLflow, TensorBoard), as run_writers.cc declares them.");
  m.def("record_run", &RecordRun, py::arg("run_dir"), py::arg("db") = "");
  m.def("steady_ns", &base::SteadyNowNs, "The steady clock the recorder's timestamps are on.");
}

}  // namespace trainprof::python
