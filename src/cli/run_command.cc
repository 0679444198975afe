// `trainprof run [options] -- COMMAND [ARGS...]`: runs any command (a training script in any
// framework) while sampling its whole process tree, the host, the GPUs (NVML) and energy, then
// writes one run folder: the system report with the per-process table, the analysis of the
// PyTorch profiler traces the command wrote (--traces), one trace.json with both on the wall
// clock, the command line, exit status and wall time, report.html and a run-history row.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/child_process.h"
#include "base/clock.h"
#include "cli/commands.h"
#include "cli/run_live.h"
#include "cli/run_traces.h"
#include "record/options_schema.h"
#include "report/json_reader.h"
#include "report/run_folder.h"
#include "report/run_meta.h"
#include "report/run_writers.h"
#include "system/sampler.h"
#include "system/system_report.h"

namespace trainprof::cli {
namespace {

namespace fs = std::filesystem;

// The sampling interval of a run unless system.interval_s is given: short commands still get
// a curve, at about 0.1 % of a core.
constexpr double kRunIntervalS = 0.2;

struct RunFlags {
  std::vector<std::string> command;
  std::string config;
  std::vector<std::string> sets;
  std::string output_dir, run_dir, name, traces, db;
  bool quiet = false, overwrite = false;
  int live_port = 0;  // --live-port: live.port
};

int FailRun(int code, const std::string& message) {
  fmt::print(stderr, "trainprof run: {}\n", message);
  return code;
}

// The command as a shell would take it back: arguments with spaces or quotes single-quoted,
// newlines written as \n so it stays on one line.
std::string CommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain =
        !a.empty() && a.find_first_of(" \t\n'\"$`\\;&|<>(){}*?!#~") == std::string::npos;
    std::string q = plain ? a : "'";
    if (!plain) {
      for (char c : a)
        q += c == '\'' ? std::string("'\\''") : c == '\n' ? std::string("\\n") : std::string(1, c);
      q += '\'';
    }
    out += q;
  }
  return out;
}

// Profiler keys from --config, then the flags, then --set (as `trainprof profile` applies them).
Status BuildOptions(const RunFlags& f, Options& o) {
  o.output.name = fs::path(f.command[0]).filename().string();
  o.system.interval_s = kRunIntervalS;
  std::vector<std::string> sets;
  if (!f.output_dir.empty()) sets.push_back("output.dir=" + f.output_dir);
  if (!f.run_dir.empty()) sets.push_back("output.run_dir=" + f.run_dir);
  if (!f.name.empty()) sets.push_back("output.name=" + f.name);
  if (f.overwrite) sets.push_back("output.overwrite=true");
  if (f.live_port != 0) sets.push_back(fmt::format("live.port={}", f.live_port));
  sets.insert(sets.end(), f.sets.begin(), f.sets.end());
  return ApplyOptionsConfig(o, f.config, sets);
}

std::unique_ptr<system::SystemSampler> StartSampler(const Options& o, const std::string& dir,
                                                    pid_t root, int64_t t0_ns) {
  system::SamplerOptions so;
  so.nvml_library = system::NvmlLibraryFromEnv();
  so.rocm_smi_library = system::RocmSmiLibraryFromEnv();
  so.disk_path = dir;
  so.interval_s = o.system.interval_s;
  so.t0_ns = t0_ns;
  so.root_pid = root;
  so.per_process = true;
  auto sampler = system::SystemSampler::Create(std::move(so));
  sampler->Start();
  return sampler;
}

// The "run" section: what ran, how it ended, how long it took.
void AddRunSection(const RunFlags& f, int status, int term_signal, double wall_s,
                   report::Report& r) {
  report::Section& s = r.AddSection("run", "Command");
  s.AddMetric("command", "Command", CommandLine(f.command), report::Unit::kText);
  s.AddMetric("exit_status", "Exit status", static_cast<int64_t>(status), report::Unit::kCount);
  s.AddMetric("wall_time_s", "Wall time", wall_s, report::Unit::kSeconds);
  if (status == 0) return;
  const int sig = base::ChildProcess::LastSignal();
  std::string why = term_signal != 0 ? fmt::format("was ended by signal {} ({})", term_signal,
                                                   strsignal(term_signal))
                                     : fmt::format("exited with status {}", status);
  if (sig != 0) why += fmt::format(" after trainprof received {}", strsignal(sig));
  s.findings.push_back(
      {report::Severity::kError,
       fmt::format("the command {}; the reports cover the {:.3g} s it ran", why, wall_s)});
}

// The largest RSS of the command's whole tree over the samples (the run's peak memory in the
// history), or -1 when no sample read it.
double TreePeakRss(const system::SystemData& d) {
  const int col = d.Find("process_rss_bytes");
  double peak = -1;
  for (size_t row = 0; col >= 0 && row < d.t_ns.size(); ++row) {
    const double v = d.At(row, static_cast<size_t>(col));
    if (!std::isnan(v)) peak = std::max(peak, v);
  }
  return peak;
}

// A program that used `import trainprof` (or a C++ Session) under run wrote its own report into
// <run folder>/session/ (TRAINPROF_RUN_DIR): its time, speed and other sections join this
// report; its system section is left out, the run's own covers the whole tree.
void AddSessionSections(const std::string& dir, report::Report& r) {
  const std::string path = dir + "/session/report.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  auto session = report::ReadReportJson(path);
  if (!session.ok()) {
    r.diagnostics.push_back({report::DiagnosticId::kSessionReportUnreadable, 1,
                             fmt::format("{}: {}", path, session.status().message())});
    return;
  }
  for (report::Section& s : session->sections) {
    if (s.id != "system") r.sections.push_back(std::move(s));
  }
  for (report::Diagnostic& d : session->diagnostics) r.diagnostics.push_back(std::move(d));
  r.AddMeta("session_report", path);
}

int RunCommand(const RunFlags& f) {
  Options o;
  if (Status s = BuildOptions(f, o); !s.ok()) return FailRun(kExitBadInput, s.message());
  const base::ClockPair start = base::ClockPair::Now();
  auto dir = report::CreateRunDir(o.output, start.wall_ns);
  if (!dir.ok()) return FailRun(kExitNoOutput, dir.status().message());
  std::error_code ec;
  const std::string abs_dir = fs::absolute(*dir, ec).string();
  std::vector<std::pair<std::string, std::string>> env = {{"TRAINPROF_RUN_DIR", abs_dir}};
  if (o.live.mode != "off" || o.live.port != 0)  // a Session inside writes session/live.json
    env.emplace_back("TRAINPROF_RUN_LIVE_S", fmt::format("{}", o.live.interval_s));
  auto child = base::ChildProcess::Start(f.command, env);
  if (!child.ok()) {
    fs::remove_all(*dir, ec);  // nothing ran: leave no empty run folder behind
    return FailRun(base::ExitCodeForStartError(child.status()), child.status().message());
  }
  base::ChildProcess::ForwardSignals(&*child);
  if (!f.quiet) fmt::print(stderr, "trainprof run: run folder {}\n", *dir);
  auto sampler = StartSampler(o, *dir, child->pid(), start.steady_ns);
  auto live = RunLiveView::Start(o, *dir, *sampler, start.steady_ns);
  child->WaitUntilEnded();
  sampler->Stop();  // its last sample still sees the command's CPU time
  live.reset();     // the live view's last snapshot, finished
  const int status = child->Wait();
  base::ChildProcess::RestoreSignals();
  const int64_t end_ns = base::SteadyNowNs() - start.steady_ns;
  const system::SystemData data = sampler->TakeData();

  report::Report r;
  r.kind = "run";
  r.title = fmt::format("trainprof run: {}", o.output.name);
  report::AddRunMeta({start.wall_ns, start.steady_ns, end_ns, *dir, -1, 0, TreePeakRss(data)}, r);
  r.AddMeta("command", CommandLine(f.command));
  r.AddMeta("exit_status", static_cast<int64_t>(status));
  r.config.emplace_back("system.interval_s", o.system.interval_s);
  r.config.emplace_back("command", CommandLine(f.command));
  // The run's name in the history (`runs list`); output.* keys stay out of the config hash.
  r.config.emplace_back("output.name", o.output.name);
  AddRunSection(f, status, child->term_signal(), static_cast<double>(end_ns) * 1e-9, r);
  AddSessionSections(*dir, r);
  system::AddSystemSection(data, 0, r);
  RunTraces traces = CollectRunTraces(f.traces, start.wall_ns, *dir, r);
  Status w = WriteRunTrace(traces, system::CounterTracks(data), start.wall_ns, o, *dir);
  std::string summary;
  Status files = report::WriteReportFiles(r, *dir, o.output, &summary);
  if (!f.quiet && o.output.print) fmt::print("{}", summary);
  std::fflush(stdout);
  if (!files.ok()) fmt::print(stderr, "trainprof run: {}\n", files.message());
  if (!w.ok()) fmt::print(stderr, "trainprof run: {}\n", w.message());
  if (!f.quiet) {
    fmt::print(stderr, "trainprof run: reports written to {}/ (report.html, report.json, ...)\n",
               *dir);
  }
  if (files.ok()) RecordRun(r, *dir, f.db, f.quiet);
  return status;  // the command's own
}

std::vector<std::string> g_after_dashes;

}  // namespace

void SetRunCommand(std::vector<std::string> command) { g_after_dashes = std::move(command); }

int SplitRunCommand(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "run") return argc;
  static const std::set<std::string_view> kWithValue = {
      "-c",        "--config", "-s",       "--set", "-o",         "--output-dir",
      "--run-dir", "--name",   "--traces", "--db",  "--live-port"};
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") {
      SetRunCommand(std::vector<std::string>(argv + i + 1, argv + argc));
      return i;
    }
    if (a.empty() || a[0] != '-') return argc;  // the command starts here
    if (kWithValue.contains(a)) ++i;            // --set KEY=VALUE: skip the value
  }
  return argc;
}

void AddRunCommand(CLI::App& app, std::function<int()>* run) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "trainprof run [OPTIONS] -- COMMAND [ARGS...]\n"
      "Run any command (a training script in any framework) under trainprof: sample its whole "
      "process tree, the host, the GPUs and energy while it runs, analyse the PyTorch profiler "
      "traces it writes (--traces), and write one run folder");
  cmd->add_option("-c,--config", f->config,
                  "YAML config file of profiler keys (system.interval_s, output.*)");
  cmd->add_option("-s,--set", f->sets, "Override one key, e.g. --set system.interval_s=0.1");
  cmd->add_option("-o,--output-dir", f->output_dir, "output.dir: run folders are created below it");
  cmd->add_option("--run-dir", f->run_dir, "output.run_dir: use exactly this run folder");
  cmd->add_flag("--overwrite", f->overwrite,
                "output.overwrite: --run-dir may name a folder holding an earlier run, whose "
                "files are removed first");
  cmd->add_option("--name", f->name, "output.name (default: the command's name)");
  cmd->add_option("--live-port", f->live_port,
                  "live.port: serve the live view as a page on this port while the command runs "
                  "(its process tree, GPUs, and the steps of a trainprof Session inside it)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--traces", f->traces,
                  "Folder where the command writes PyTorch profiler traces "
                  "(*.pt.trace.json[.gz], e.g. tensorboard_trace_handler's); those written "
                  "during the run are analysed as `trainprof analyze` does");
  AddDbOption(cmd, &f->db, /*records=*/true);
  cmd->add_flag("-q,--quiet", f->quiet,
                "Print no status lines and no report (as in profile; the run folder is still "
                "written; the command's own output is untouched)");
  // Everything from the first argument that is not an option of run (or after --) is the
  // command, with its own options untouched.
  cmd->prefix_command();
  cmd->footer(
      "The command runs in this terminal, folder and environment, with TRAINPROF_RUN_DIR set to "
      "the run folder: a program using `import trainprof` writes its reports to its session/ "
      "folder, and their time and speed sections join the run's report.\n"
      "SIGINT and SIGTERM sent to trainprof are forwarded to it.\n"
      "Exit status: the command's own; 127 when it is not found, 126 when it cannot be run, "
      "2 for bad trainprof options.\nExamples:\n"
      "  trainprof run -- python3 train.py --epochs 1\n"
      "  trainprof run --traces tb_logs --set system.interval_s=0.2 -- torchrun "
      "--nproc-per-node 2 train.py");
  cmd->callback([f, run, cmd] {
    f->command = g_after_dashes.empty() ? cmd->remaining() : g_after_dashes;
    if (f->command.empty())
      throw CLI::RequiredError("COMMAND (trainprof run [options] -- COMMAND)");
    *run = [f] { return RunCommand(*f); };
  });
}

}  // namespace trainprof::cli
