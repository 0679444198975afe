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
#include "cli/ranks.h"
#include "jobs/job_config.h"
#include "jobs/launch_env.h"
#include "record/options_schema.h"
#include "report/run_folder.h"
#include "report/run_writers.h"
#include "session/live.h"
#include "session/rank_merge.h"
#include "trainprof/session.h"
#ifdef TRAINPROF_HAVE_TORCH
#include <thread>

#include "base/atomic_file.h"
#include "base/child_process.h"
#include "jobs/distributed.h"
#include "jobs/fashion_mnist_job.h"
#include "jobs/live_channel.h"
#include "report/json_reader.h"
#include "session/repeat_pool.h"
#endif

namespace trainprof::cli {
namespace {

struct ProfileFlags {
  std::string config;
  std::vector<std::string> sets;
  std::string output_dir, run_dir, name;
  std::string db;  // run history (--db)
  // As typed: checked against training.epochs' and training.limit_train_batches' ranges.
  std::string epochs, limit_train_batches;
  int64_t nproc_per_node = 0, repeat = 1;
  bool verbose = false, quiet = false, no_progress = false, print_config = false, overwrite = false;
};

// Set in the processes a `--repeat N` run starts: the folder this one repeat writes.
constexpr const char* kRepeatDirEnv = "TRAINPROF_REPEAT_DIR";

// "rank 3: " in a multi-rank run, so every line on the shared terminal says whose it is.
std::string g_rank_prefix;

int Fail(int code, const Status& s) {
  fmt::print(stderr, "trainprof profile: {}error: {}\n", g_rank_prefix, s.ToString());
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

#ifdef TRAINPROF_HAVE_TORCH
// A multi-rank run, seen from one rank: the process group, the agreed run folder (rank 0's),
// and this rank's clock offset.
struct RankRun {
  std::unique_ptr<jobs::Distributed> dist;
  std::string merged_dir;  // the run folder; this rank writes into <merged_dir>/rank<N>
  jobs::ClockOffset clock;
  Options::Output merged_output;  // the merged run's outputs, with the exporters
};

// Joins the process group, agrees on the run folder and measures the clock offset.
StatusOr<RankRun> JoinRanks(const jobs::LaunchEnv& env, jobs::JobConfig& cfg) {
  RankRun rr;
  g_rank_prefix = fmt::format("rank {}: ", env.rank);
  TRAINPROF_ASSIGN_OR_RETURN(rr.dist, jobs::Distributed::Init(env, cfg.distributed));
  if (env.rank == 0) {
    TRAINPROF_ASSIGN_OR_RETURN(
        rr.merged_dir, report::CreateRunDir(cfg.profiler.output,
                                            std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count()));
    TRAINPROF_RETURN_IF_ERROR(rr.dist->Set("run_dir", rr.merged_dir));
  } else {
    TRAINPROF_ASSIGN_OR_RETURN(rr.merged_dir, rr.dist->Get("run_dir", rr.dist->timeout()));
  }
  cfg.profiler.output.run_dir = fmt::format("{}/rank{}", rr.merged_dir, env.rank);
  // The exporters get the merged run, not each rank's.
  rr.merged_output = cfg.profiler.output;
  report::ClearExporters(cfg.profiler.output);
  // As torchrun sets OMP_NUM_THREADS: the node's cores shared among its ranks.
  if (cfg.training.threads == 0) {
    cfg.training.threads = std::max<int64_t>(
        1, static_cast<int64_t>(std::thread::hardware_concurrency()) / env.local_world_size);
  }
  if (env.rank != 0) cfg.training.progress = "off";
  TRAINPROF_ASSIGN_OR_RETURN(rr.clock, rr.dist->MeasureClockOffset());
  return rr;
}

// Every rank publishes its report.json and trace.json through the store; rank 0 waits for all
// (up to distributed.timeout_s), writes the merged report into the run folder and prints it.
// Returns the exit code of this rank's part.
int ExchangeReports(RankRun& rr, const jobs::JobConfig& cfg, const std::string& rank_dir,
                    const std::string& status) {
  jobs::Distributed& d = *rr.dist;
  const int64_t rank = d.rank();
  auto read = [](const std::string& path) {
    auto t = base::ReadFile(path);
    return t.ok() ? *t : std::string();
  };
  const std::string prefix = fmt::format("rank/{}/", rank);
  Status pub = d.Set(prefix + "report", read(rank_dir + "/report.json"));
  if (pub.ok())
    pub = d.Set(prefix + "trace", cfg.profiler.output.trace ? read(rank_dir + "/trace.json") : "");
  if (pub.ok()) {
    pub = d.Set(prefix + "done",
                fmt::format("{} {}\n{}", rr.clock.offset_ns, rr.clock.error_ns, status));
  }
  if (rank != 0) {
    if (!pub.ok()) {
      fmt::print(stderr,
                 "trainprof profile: {}error: {}\n  rank 0 is gone, so there is no merged report; "
                 "this rank's reports are in {}\n",
                 g_rank_prefix, pub.ToString(), rank_dir);
      return kExitFailure;
    }
    return status == "ok" ? kExitOk : kExitFailure;
  }
  // Rank 0: collect every rank, polling so that a dead rank costs the timeout, not forever.
  session::MergeInput in;
  in.world_size = d.world_size();
  in.launcher = d.env().launcher;
  in.name = cfg.profiler.output.name;
  in.run_dir = rr.merged_dir;
  const auto deadline = std::chrono::steady_clock::now() + d.timeout();
  std::vector<bool> have(static_cast<size_t>(in.world_size), false);
  int64_t pending = in.world_size;
  while (pending > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int64_t r = 0; r < in.world_size; ++r) {
      if (have[static_cast<size_t>(r)]) continue;
      auto ok = d.Check(fmt::format("rank/{}/done", r));
      if (ok.ok() && *ok) {
        have[static_cast<size_t>(r)] = true;
        --pending;
      }
    }
    if (pending > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto quick = std::chrono::milliseconds(5000);
  for (int64_t r = 0; r < in.world_size; ++r) {
    if (!have[static_cast<size_t>(r)]) {
      in.missing.emplace_back(
          r, fmt::format("it sent no report within distributed.timeout_s = {:g} s after rank 0 "
                         "finished: it died, hung or was killed (its own folder, if it got that "
                         "far: {}/rank{})",
                         cfg.distributed.timeout_s, rr.merged_dir, r));
      fmt::print(stderr, "trainprof profile: error: rank {}: {}\n", r, in.missing.back().second);
      continue;
    }
    session::RankResult res;
    res.rank = r;
    auto done = d.Get(fmt::format("rank/{}/done", r), quick);
    auto report = d.Get(fmt::format("rank/{}/report", r), quick);
    auto trace = d.Get(fmt::format("rank/{}/trace", r), quick);
    if (!done.ok() || !report.ok() || !trace.ok()) {
      in.missing.emplace_back(r, "its report could not be read from the store");
      continue;
    }
    const size_t nl = done->find('\n');
    std::sscanf(done->c_str(), "%ld %ld", &res.clock_offset_ns, &res.clock_error_ns);
    res.status = nl == std::string::npos ? "ok" : done->substr(nl + 1);
    res.report_json = std::move(*report);
    res.trace_json = std::move(*trace);
    in.ranks.push_back(std::move(res));
  }
  std::string summary;
  Status w = session::WriteMergedRun(in, rr.merged_output, &summary);
  if (summary.empty()) return Fail(kExitFailure, w);  // the reports did not merge
  fmt::print("\n{}", summary);
  if (!w.ok()) return Fail(kExitFailure, w);
  fmt::print("\nMerged report of {} ranks written to {}/ (per-rank folders rank0/ ... rank{}/)\n",
             in.world_size, rr.merged_dir, in.world_size - 1);
  const bool all_ok = in.missing.empty() &&
                      std::ranges::all_of(in.ranks, [](const auto& r) { return r.status == "ok"; });
  return all_ok && status == "ok" ? kExitOk : kExitFailure;
}
#endif

#ifdef TRAINPROF_HAVE_TORCH
// One repeat of a --repeat run, in a process of its own (this command line again, with
// kRepeatDirEnv naming its folder). Returns its report, or the exit code to end with.
StatusOr<report::Report> RunOneRepeat(const std::string& dir, int64_t i, int64_t n, int* code) {
  std::vector<std::string> argv = ProgramArgs();
  argv[0] = SelfExe();
  fmt::print(stderr, "trainprof profile: repeat {} of {} ({})\n", i, n, dir);
  auto child = base::ChildProcess::Start(argv, {{kRepeatDirEnv, dir}});
  if (!child.ok()) return *code = kExitFailure, child.status();
  base::ChildProcess::ForwardSignals(&*child);
  *code = child->Wait();
  base::ChildProcess::RestoreSignals();
  if (*code != 0) {
    return FailedPrecondition(
        fmt::format("repeat {} of {} failed (exit code {}); its folder is {}", i, n, *code, dir));
  }
  auto r = report::ReadReportJson(dir + "/report.json");
  if (!r.ok()) *code = kExitFailure;
  return r;
}

// --repeat N: the job N times, each in its own process and folder, then the pooled report.
int RunRepeats(const ProfileFlags& f, const jobs::JobConfig& cfg) {
  if (f.nproc_per_node > 1 || std::getenv("WORLD_SIZE") != nullptr ||
      std::getenv("SLURM_NTASKS") != nullptr) {
    return Fail(kExitBadInput, InvalidArgument("--repeat runs one process at a time and cannot be "
                                               "combined with several ranks"));
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto dir = report::CreateRunDir(cfg.profiler.output, now);
  if (!dir.ok()) return Fail(kExitNoOutput, dir.status());
  std::vector<report::Report> reports;
  for (int64_t i = 1; i <= f.repeat; ++i) {
    int code = kExitOk;
    auto r = RunOneRepeat(fmt::format("{}/repeat{}", *dir, i), i, f.repeat, &code);
    if (!r.ok()) return Fail(code, r.status());
    reports.push_back(std::move(*r));
  }
  auto pooled = session::PoolRepeats(reports, *dir);
  if (!pooled.ok()) return Fail(kExitFailure, pooled.status());
  std::string summary;
  Status w = report::WriteReportFiles(*pooled, *dir, cfg.profiler.output, &summary);
  if (!f.quiet) fmt::print("{}", summary);
  if (!w.ok()) return Fail(kExitNoOutput, w);
  if (!f.quiet) {
    fmt::print(
        "\nReports written to {}/ (the steps of {} repeats pooled; each repeat's own "
        "reports and trace.json in repeat1/ ... repeat{}/)\n",
        *dir, f.repeat, f.repeat);
  }
  return RecordRunFolder(*dir, f.db, f.quiet);
}
#endif

// Builds the configuration: embedded defaults, then --config, then flags.
Status BuildConfig(const ProfileFlags& f, jobs::JobConfig& cfg, base::ConfigSchema& schema) {
  jobs::AddJobKeys(schema, cfg);
  TRAINPROF_RETURN_IF_ERROR(jobs::ApplyDefaultConfig(schema));
  if (!f.config.empty()) TRAINPROF_RETURN_IF_ERROR(schema.ApplyFile(f.config));
  if (!f.epochs.empty())
    TRAINPROF_RETURN_IF_ERROR(schema.ApplyFlag("--epochs", "training.epochs", f.epochs));
  if (!f.limit_train_batches.empty()) {
    TRAINPROF_RETURN_IF_ERROR(schema.ApplyFlag(
        "--limit-train-batches", "training.limit_train_batches", f.limit_train_batches));
  }
  std::vector<std::string> sets;
  if (f.overwrite) sets.push_back("output.overwrite=true");
  if (!f.output_dir.empty()) sets.push_back("output.dir=" + f.output_dir);
  if (!f.run_dir.empty()) sets.push_back("output.run_dir=" + f.run_dir);
  if (!f.name.empty()) sets.push_back("output.name=" + f.name);
  if (f.verbose) sets.push_back("time.verbose=true");
  if (f.quiet || f.no_progress) sets.push_back("training.progress=off");
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
  // A repeat of a --repeat run writes its folder and nothing else; the parent pools and records.
  const char* repeat_dir = std::getenv(kRepeatDirEnv);
  if (repeat_dir == nullptr && f.repeat > 1) return RunRepeats(f, cfg);
  const std::string db = repeat_dir != nullptr ? "off" : f.db;
  if (repeat_dir != nullptr) {
    cfg.profiler.output.run_dir = repeat_dir;
    cfg.profiler.output.overwrite = false;
    report::ClearExporters(cfg.profiler.output);  // the parent exports the pooled run
  }
  auto env = jobs::ParseLaunchEnv([](const char* k) { return std::getenv(k); });
  if (!env.ok()) return Fail(kExitBadInput, env.status());
  if (f.nproc_per_node > 1 && env->launcher.empty()) {
    return LaunchLocalRanks(f.nproc_per_node, cfg.distributed.timeout_s + 30);
  }
  // Everything that can be checked before training is checked before the run folder exists.
  if (Status d = jobs::CheckTrainingDevice(cfg, env->world_size > 1); !d.ok())
    return Fail(kExitBadInput, d);
  auto data = jobs::LoadData(cfg.data);
  if (!data.ok()) return Fail(kExitBadInput, data.status());
  cfg.profiler.output.print = false;  // this command prints the summary itself
  std::optional<RankRun> ranks;
  if (env->world_size > 1) {
    auto joined = JoinRanks(*env, cfg);
    if (!joined.ok()) return Fail(kExitFailure, joined.status());
    ranks = std::move(*joined);
    if (env->rank == 0) {
      fmt::print(stderr, "trainprof profile: {} ranks joined ({}, {} backend)\n", env->world_size,
                 env->launcher, cfg.distributed.backend);
    }
  }
  if (ranks && cfg.profiler.live.mode != "off")  // rank 0's view shows every rank
    session::SetLiveChannel(std::make_shared<jobs::StoreLiveChannel>(ranks->dist.get()));
  auto session = Session::Create(cfg.profiler);
  if (!session.ok()) return Fail(kExitNoOutput, session.status());
  Session& s = **session;
  for (const auto& [key, value] : schema.CurrentValues()) {
    if (key.rfind("training.", 0) != 0 && key.rfind("data.", 0) != 0) continue;
    std::visit([&, k = key](const auto& v) { s.AddConfigValue(k, v); }, value);
  }
  if (!f.config.empty()) s.SetMeta("config_file", f.config);
  InstallSignalHandlers();
  if (f.quiet) {
  } else if (!ranks) {
    fmt::print(stderr, "trainprof profile: run folder {}\n", s.run_dir());
  } else if (env->rank == 0) {
    fmt::print(stderr, "trainprof profile: run folder {} (rank folders rank0/ ... rank{}/)\n",
               ranks->merged_dir, env->world_size - 1);
  }
  auto result = jobs::RunFashionMnist(cfg, *data, s, ranks ? ranks->dist.get() : nullptr);
  int code = kExitOk;
  std::string rank_status = "ok";
  if (!result.ok()) {
    rank_status = fmt::format("training failed: {}", result.status().message());
    s.AddNote(fmt::format("training failed: {}", result.status().ToString()));
    s.SetMeta("stopped_by", result.status().ToString());
    fmt::print(stderr, "trainprof profile: {}error: {}\n", g_rank_prefix,
               result.status().ToString());
    code = kExitFailure;
  } else if (result->stopped_by_other_rank) {
    s.SetMeta("stopped_by", "another rank's signal");
    s.AddNote(
        fmt::format("stopped after {} training steps because another rank was stopped by "
                    "a signal",
                    result->train_steps));
  } else if (result->stop_signal != 0) {
    rank_status = fmt::format("stopped by {}", strsignal(result->stop_signal));
    s.AddNote(
        fmt::format("stopped by {} after {} training and {} validation steps; the reports "
                    "cover the completed steps",
                    strsignal(result->stop_signal), result->train_steps, result->val_steps));
    s.SetMeta("stopped_by", strsignal(result->stop_signal));
    code = 128 + result->stop_signal;
  } else {
    s.SetMeta("result", fmt::format("validation loss {:.4f}, accuracy {:.2f} %", result->val_loss,
                                    100.0 * result->val_accuracy));
  }
  Status fin = s.Finish();
  session::SetLiveChannel(nullptr);
  if (ranks) {
    if (!fin.ok()) rank_status = fmt::format("its reports were not all written: {}", fin.message());
    if (env->rank == 0 && !f.quiet) fmt::print("{}", s.summary());
    const int merged = ExchangeReports(*ranks, cfg, s.run_dir(), rank_status);
    if (env->rank == 0 && code == kExitOk && merged == kExitOk)
      return RecordRunFolder(ranks->merged_dir, db, f.quiet);
    return code != kExitOk ? code : merged;
  }
  if (repeat_dir != nullptr) return fin.ok() ? code : Fail(kExitFailure, fin);
  if (!f.quiet) fmt::print("{}", s.summary());
  if (!fin.ok()) return Fail(kExitFailure, fin);
  if (!f.quiet) {
    fmt::print(
        "\nReports written to {}/ (report.html, summary.txt, report.json, *.csv, trace.json)\n",
        s.run_dir());
  }
  if (code == kExitOk) return RecordRunFolder(s.run_dir(), db, f.quiet);
  return code;
#endif
}

}  // namespace

void AddProfileCommand(CLI::App& app, std::function<int()>* run) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* cmd = app.add_subcommand("profile", kProfileDescription);
  cmd->add_option("-c,--config", flags->config, "YAML config file (keys: docs/config.md)");
  cmd->add_option("-s,--set", flags->sets,
                  "Override one config key, e.g. --set training.epochs=1 (repeatable)");
  cmd->add_option("--epochs", flags->epochs, "training.epochs (1 or more)")->type_name("INT");
  cmd->add_option("--nproc-per-node", flags->nproc_per_node,
                  "Start N ranks on this machine (data-parallel, Gloo), as torchrun "
                  "--nproc-per-node; each writes rank<N>/ and rank 0 the merged report. Under "
                  "torchrun or srun, leave it out: the ranks are read from their variables")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--limit-train-batches", flags->limit_train_batches,
                  "training.limit_train_batches (0 = all)")
      ->type_name("INT");
  cmd->add_option("--repeat", flags->repeat,
                  "Run the job N times, each in its own process (repeat1/ ... repeatN/), and pool "
                  "the training steps: the report records the run-to-run spread, which "
                  "`trainprof compare` uses (docs/ci.md)")
      ->check(CLI::Range(1, 1000));
  AddOutputDirOption(cmd, &flags->output_dir, "output.dir: run folders are created below it");
  cmd->add_option("--run-dir", flags->run_dir, "output.run_dir: use exactly this run folder");
  cmd->add_flag("--overwrite", flags->overwrite,
                "output.overwrite: --run-dir may name a folder holding an earlier run, whose "
                "files are removed first");
  cmd->add_option("--name", flags->name, "output.name: the run folder's name suffix");
  AddDbOption(cmd, &flags->db, /*records=*/true);
  cmd->add_flag("-v,--verbose", flags->verbose, "time.verbose: every action in the time report");
  cmd->add_flag("-q,--quiet", flags->quiet,
                "Print no progress and no report (as in run; the run folder is still written)");
  cmd->add_flag("--no-progress", flags->no_progress,
                "training.progress=off: no progress display; the report is still printed");
  cmd->add_flag("--list-keys", flags->print_config,
                "List every config key with its value (after --config and --set), allowed "
                "values and meaning, as a Markdown table, and exit");
  cmd->footer(ExitCodesHelp(
      {{kExitOk, "success"},
       {kExitFailure, "training failed, or a report could not be written or recorded"},
       {kExitBadInput, "bad input: command line, config file, dataset"},
       {kExitNoOutput,
        "the run folder cannot be created, is in use by another process, or "
        "holds an earlier run (--overwrite)"},
       {130, kExitSignal}}));
  cmd->callback([flags, run] { *run = [flags] { return RunProfile(*flags); }; });
}

}  // namespace trainprof::cli
