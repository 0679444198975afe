// `trainprof profile`: trains the built-in LibTorch job under the profiler and prints the
// reports, as `anemoi-training profile` does.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "base/config_schema.h"
#include "cli/commands.h"
#include "jobs/job_config.h"
#include "record/options_schema.h"
#include "trainprof/session.h"
#ifdef TRAINPROF_HAVE_TORCH
#include "jobs/fashion_mnist_job.h"
#endif

namespace trainprof::cli {
namespace {

struct ProfileFlags {
  std::string config;
  std::vector<std::string> sets;
  std::string output_dir, run_dir, name;
  int64_t epochs = 0, limit_train_batches = -1;
  bool verbose = false, quiet = false, print_config = false;
};

int Fail(int code, const Status& s) {
  fmt::print(stderr, "trainprof profile: error: {}\n", s.ToString());
  return code;
}

#ifdef TRAINPROF_HAVE_TORCH
void OnSignal(int sig) {
  jobs::g_stop_signal.store(sig);
  // A second Ctrl-C ends the process at once.
  std::signal(sig, SIG_DFL);
}

void InstallSignalHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}
#endif

// Builds the configuration: embedded defaults, then --config, then flags.
Status BuildConfig(const ProfileFlags& f, jobs::JobConfig& cfg, base::ConfigSchema& schema) {
  jobs::AddJobKeys(schema, cfg);
  TRAINPROF_RETURN_IF_ERROR(jobs::ApplyDefaultConfig(schema));
  if (!f.config.empty()) TRAINPROF_RETURN_IF_ERROR(schema.ApplyFile(f.config));
  std::vector<std::string> sets;
  if (f.epochs > 0) sets.push_back(fmt::format("training.epochs={}", f.epochs));
  if (f.limit_train_batches >= 0) {
    sets.push_back(fmt::format("training.limit_train_batches={}", f.limit_train_batches));
  }
  if (!f.output_dir.empty()) sets.push_back("output.dir=" + f.output_dir);
  if (!f.run_dir.empty()) sets.push_back("output.run_dir=" + f.run_dir);
  if (!f.name.empty()) sets.push_back("output.name=" + f.name);
  if (f.verbose) sets.push_back("time.verbose=true");
  if (f.quiet) sets.push_back("training.progress=off");
  sets.insert(sets.end(), f.sets.begin(), f.sets.end());
  for (const std::string& s : sets) TRAINPROF_RETURN_IF_ERROR(schema.ApplyOverride(s));
  return Status::Ok();
}

// Every key as a Markdown table row: key, type, value (defaults plus --config and --set), the
// allowed values, and what it does. docs/config.md is made from this output.
void PrintKeys(const base::ConfigSchema& schema) {
  fmt::print("| key | type | value | allowed | what it does |\n|---|---|---|---|---|\n");
  for (const base::ConfigKey& k : schema.Keys()) {
    std::string allowed;
    switch (k.type) {
      case base::ConfigType::kInt:
        allowed = k.int_max >= (int64_t{1} << 32) ? fmt::format(">= {}", k.int_min)
                                                  : fmt::format("{} to {}", k.int_min, k.int_max);
        break;
      case base::ConfigType::kDouble:
        allowed = fmt::format("{} to {}", k.double_min, k.double_max);
        break;
      case base::ConfigType::kBool:
        allowed = "true, false";
        break;
      case base::ConfigType::kString:
        allowed = k.choices.empty() ? "any" : fmt::format("{}", fmt::join(k.choices, ", "));
        break;
    }
    std::string value = base::ConfigValueText(base::ConfigSchema::ValueOf(k));
    fmt::print("| `{}` | {} | `{}` | {} | {} |\n", k.key, base::ConfigTypeName(k.type),
               value.empty() ? "\"\"" : value, allowed, k.help);
  }
}

int RunProfile(const ProfileFlags& f) {
  jobs::JobConfig cfg;
  base::ConfigSchema schema;
  if (Status s = BuildConfig(f, cfg, schema); !s.ok()) return Fail(kExitBadInput, s);
  // Checked here, before the dataset is read, so that Session::Create() can only fail on the
  // run folder.
  if (Status s = ValidateOptions(cfg.profiler); !s.ok()) return Fail(kExitBadInput, s);
  if (f.print_config) {
    PrintKeys(schema);
    return kExitOk;
  }
#ifndef TRAINPROF_HAVE_TORCH
  return Fail(kExitBadInput,
              FailedPrecondition("this trainprof was built without LibTorch, so it has no "
                                 "training job; install libtorch-dev and rebuild"));
#else
  // Everything that can be checked before training is checked before the run folder exists.
  auto data = jobs::LoadData(cfg.data);
  if (!data.ok()) return Fail(kExitBadInput, data.status());
  cfg.profiler.output.print = false;  // this command prints the summary itself
  auto session = Session::Create(cfg.profiler);
  if (!session.ok()) return Fail(kExitNoOutput, session.status());
  Session& s = **session;
  for (const auto& [key, value] : schema.CurrentValues()) {
    if (key.rfind("training.", 0) != 0 && key.rfind("data.", 0) != 0) continue;
    std::visit([&, k = key](const auto& v) { s.AddConfigValue(k, v); }, value);
  }
  if (!f.config.empty()) s.SetMeta("config_file", f.config);
  InstallSignalHandlers();
  fmt::print(stderr, "trainprof profile: run folder {}\n", s.run_dir());
  auto result = jobs::RunFashionMnist(cfg, *data, s);
  int code = kExitOk;
  if (!result.ok()) {
    s.AddNote(fmt::format("training failed: {}", result.status().ToString()));
    fmt::print(stderr, "trainprof profile: error: {}\n", result.status().ToString());
    code = kExitFailure;
  } else if (result->stop_signal != 0) {
    s.AddNote(
        fmt::format("stopped by {} after {} training and {} validation steps; the reports "
                    "cover the completed steps",
                    strsignal(result->stop_signal), result->train_steps, result->val_steps));
    code = 128 + result->stop_signal;
  } else {
    s.SetMeta("result", fmt::format("validation loss {:.4f}, accuracy {:.2f} %", result->val_loss,
                                    100.0 * result->val_accuracy));
  }
  Status fin = s.Finish();
  fmt::print("{}", s.summary());
  if (!fin.ok()) return Fail(kExitFailure, fin);
  fmt::print("\nReports written to {}/ (summary.txt, report.json, *.csv, trace.json)\n",
             s.run_dir());
  return code;
#endif
}

}  // namespace

void AddProfileCommand(CLI::App& app, std::function<int()>* run) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Train the built-in LibTorch job (the PyTorch profiler tutorial's CNN on Fashion-MNIST)\n"
      "under the profiler and print the time and speed reports. With no option it runs the\n"
      "embedded default config (configs/default.yaml in the source tree).");
  cmd->add_option("-c,--config", flags->config, "YAML config file (keys: docs/config.md)");
  cmd->add_option("-s,--set", flags->sets,
                  "Override one config key, e.g. --set training.epochs=1 (repeatable)");
  cmd->add_option("--epochs", flags->epochs, "training.epochs");
  cmd->add_option("--limit-train-batches", flags->limit_train_batches,
                  "training.limit_train_batches (0 = all)");
  cmd->add_option("-o,--output-dir", flags->output_dir,
                  "output.dir: run folders are created below it");
  cmd->add_option("--run-dir", flags->run_dir, "output.run_dir: use exactly this run folder");
  cmd->add_option("--name", flags->name, "output.name: the run folder's name suffix");
  cmd->add_flag("-v,--verbose", flags->verbose, "time.verbose: every action in the time report");
  cmd->add_flag("-q,--quiet", flags->quiet, "training.progress=off: no progress display");
  cmd->add_flag("--list-keys", flags->print_config,
                "List every config key with its value (after --config and --set), allowed "
                "values and meaning, as a Markdown table, and exit");
  cmd->footer(kExitCodesHelp);
  cmd->callback([flags, run] { *run = [flags] { return RunProfile(*flags); }; });
}

}  // namespace trainprof::cli
