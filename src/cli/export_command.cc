// `trainprof export RUN_DIR`: a finished run folder into the trackers people already use (an
// MLflow file store, a TensorBoard log dir), by the same exporters as the output.* keys.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "record/options_schema.h"
#include "report/json_reader.h"
#include "report/run_writers.h"

namespace trainprof::cli {
namespace {

struct ExportFlags {
  std::string run_dir;
  Options::Output out;
  bool replace = false;
};

int Export(const ExportFlags& f) {
  auto r = report::ReadReportJson((std::filesystem::path(f.run_dir) / "report.json").string());
  if (!r.ok()) {
    fmt::print(stderr, "trainprof export: {}\n", r.status().message());
    return kExitBadInput;
  }
  Status s = report::ExportRun(*r, f.run_dir, f.out, f.replace);
  if (!s.ok()) {
    fmt::print(stderr, "trainprof export: {}\n", s.message());
    const bool bad = s.code() == StatusCode::kInvalidArgument ||
                     s.code() == StatusCode::kFailedPrecondition;  // exported already
    return bad ? kExitBadInput : kExitFailure;
  }
  for (const report::RunWriter* w : report::EnabledExporters(f.out))
    fmt::print("trainprof export: {} -> {} {}\n", f.run_dir, w->what, f.out.*(w->keys.at(0).field));
  return kExitOk;
}

}  // namespace

void AddExportOptions(CLI::App* sub, Options::Output* out) {
  // Each exporter's keys, with the help the config schema gives them.
  Options defaults;
  base::ConfigSchema schema;
  AddOptionsKeys(schema, defaults);
  for (const report::ExportKey& k : report::ExportKeys()) {
    const base::ConfigKey* key = schema.Find(k.key);
    const std::string help = key != nullptr ? key->help : "";
    sub->add_option(report::ExportFlag(k), out->*(k.field), fmt::format("{} ({})", help, k.key));
  }
}

void AddExportCommand(CLI::App& app, std::function<int()>* run) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Put a finished run into an MLflow file store or a TensorBoard log dir");
  cmd->add_option("run_dir", f->run_dir, "The run folder (it holds report.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  AddExportOptions(cmd, &f->out);
  cmd->add_flag("--replace", f->replace,
                "A run already in the MLflow store is written again (else refused)");
  cmd->footer(
      "The MLflow store is appended to, never rewritten: a numeric experiment folder with its "
      "meta.yaml, the run's meta.yaml, metrics/ (the key figures, training_rate and "
      "validation_rate per step), params/ (the config), tags/ and the reports under "
      "artifacts/. Open it with\n  MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri "
      "DIR\nor move it into SQLite with `mlflow migrate-filestore`. The TensorBoard file holds "
      "the rate curves, step times, system series and key figures as scalars and the text "
      "report: tensorboard --logdir DIR.\nExamples:\n"
      "  trainprof export runs/20261125T101500Z-fashion-mnist --mlflow mlruns\n"
      "  trainprof export latest-run/ --tensorboard tb/ --mlflow mlruns --mlflow-experiment "
      "nightly\nSee docs/trackers.md.\n" +
      ExitCodesHelp({{kExitOk, "exported"},
                     {kExitFailure, "the store or log dir could not be written"},
                     {kExitBadInput,
                      "bad input: no report.json, no exporter chosen, a run already exported "
                      "(without --replace)"}}));
  cmd->callback([run, f] { *run = [f] { return Export(*f); }; });
}

}  // namespace trainprof::cli
