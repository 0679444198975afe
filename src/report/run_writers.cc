#include "report/run_writers.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "base/atomic_file.h"
#include "report/csv.h"
#include "report/html.h"
#include "report/json.h"
#include "report/mlflow_export.h"
#include "report/run_folder.h"
#include "report/tensorboard_export.h"
#include "report/terminal.h"

namespace trainprof::report {
namespace {

bool Always(const Options::Output&) { return true; }

Status WriteSummary(const RunFiles& f) {
  return base::WriteFileAtomically(f.dir + "/summary.txt", f.summary);
}
Status WriteJson(const RunFiles& f) {
  return WriteRendered(JsonRenderer(), f.report, f.dir + "/report.json");
}
Status WriteHtml(const RunFiles& f) {
  return WriteRendered(HtmlRenderer(), f.report, f.dir + "/report.html");
}
Status WriteCsv(const RunFiles& f) { return WriteCsvFiles(f.report, f.dir, nullptr); }

bool Enabled(const RunWriter& w, const Options::Output& o) {
  return w.enabled != nullptr ? w.enabled(o) : !(o.*(w.keys.at(0).field)).empty();
}

// The writers of one phase that `o` switches on, in the list's order.
std::vector<const RunWriter*> EnabledWriters(WritePhase phase, const Options::Output& o) {
  std::vector<const RunWriter*> out;
  for (const RunWriter& w : RunWriters())
    if (w.phase == phase && Enabled(w, o)) out.push_back(&w);
  return out;
}

// `s` into `first` when it is the first error: each names its file or store, and the writers
// after it still run.
void KeepFirst(Status& first, Status s) {
  if (!s.ok() && first.ok()) first = std::move(s);
}

// Runs the enabled writers of one phase, keeping the first error.
void RunPhase(WritePhase phase, const RunFiles& f, Status& first) {
  for (const RunWriter* w : EnabledWriters(phase, f.output)) KeepFirst(first, w->write(f));
}

}  // namespace

std::vector<ExportKey> ExportKeys() {
  std::vector<ExportKey> out;
  for (const RunWriter& w : RunWriters()) out.insert(out.end(), w.keys.begin(), w.keys.end());
  return out;
}

void ClearExporters(Options::Output& o) {
  for (const ExportKey& k : ExportKeys()) (o.*(k.field)).clear();
}

std::string ExportFlag(const ExportKey& k) {
  std::string flag = "--" + std::string(k.key).substr(std::string_view("output.").size());
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::vector<const RunWriter*> EnabledExporters(const Options::Output& o) {
  return EnabledWriters(WritePhase::kExport, o);
}

std::vector<RunWriter>& RunWriters() {
  static std::vector<RunWriter> kRunWriters = {
      {"summary.txt", WritePhase::kMain, Always, WriteSummary},
      {"report.html", WritePhase::kMain, Always, WriteHtml},
      {"report.json", WritePhase::kSide, Always, WriteJson},
      {"CSV files", WritePhase::kSide, [](const Options::Output& o) { return o.csv; }, WriteCsv},
      {"MLflow store",
       WritePhase::kExport,
       nullptr,
       ExportToMlflow,
       {{"output.mlflow", &Options::Output::mlflow},
        {"output.mlflow_experiment", &Options::Output::mlflow_experiment}}},
      {"TensorBoard log dir",
       WritePhase::kExport,
       nullptr,
       ExportToTensorBoard,
       {{"output.tensorboard", &Options::Output::tensorboard}}},
  };
  return kRunWriters;
}

Status WriteFolderFiles(const Report& r, const std::string& dir, const Options::Output& output,
                        std::string* summary, const std::vector<ExtraFile>& extra) {
  std::ostringstream text;
  TerminalRenderer().Render(r, text);
  *summary = text.str();
  const RunFiles files{r, dir, output, *summary};
  const std::vector<const RunWriter*> side = EnabledWriters(WritePhase::kSide, output);
  std::vector<Status> side_status(side.size(), Status::Ok());
  std::vector<std::thread> others;
  for (size_t i = 0; i < side.size(); ++i)
    others.emplace_back([&, i] { side_status[i] = side[i]->write(files); });
  Status first = Status::Ok();
  RunPhase(WritePhase::kMain, files, first);
  for (std::thread& t : others) t.join();
  for (Status& s : side_status) KeepFirst(first, std::move(s));
  for (const ExtraFile& e : extra) KeepFirst(first, e.write());
  return first;
}

Status RunExporters(const Report& r, const std::string& dir, const Options::Output& output,
                    const std::string& summary) {
  Status first = Status::Ok();
  RunPhase(WritePhase::kExport, RunFiles{r, dir, output, summary}, first);
  return first;
}

Status WriteReportFiles(const Report& r, const std::string& dir, const Options::Output& output,
                        std::string* summary, const std::vector<ExtraFile>& extra) {
  Status first = WriteFolderFiles(r, dir, output, summary, extra);
  Status exported = RunExporters(r, dir, output, *summary);
  return first.ok() ? exported : first;
}

Status ExportRun(const Report& r, const std::string& dir, const Options::Output& output,
                 bool replace) {
  std::string summary;
  if (auto text = base::ReadFile(dir + "/summary.txt"); text.ok()) {
    summary = std::move(*text);
  } else {
    std::ostringstream out;
    TerminalRenderer().Render(r, out);
    summary = out.str();
  }
  const RunFiles files{r, dir, output, summary, replace};
  if (EnabledExporters(output).empty()) {
    std::string flags;
    for (const RunWriter& w : RunWriters())
      if (w.phase == WritePhase::kExport)
        flags += (flags.empty() ? "" : ", ") + ExportFlag(w.keys.at(0)) + " DIR";
    return InvalidArgument(fmt::format("no exporter chosen ({})", flags));
  }
  Status first = Status::Ok();
  RunPhase(WritePhase::kExport, files, first);
  return first;
}

}  // namespace trainprof::report
