#include "trainprof/session.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/config_schema.h"
#include "base/text.h"
#include "base/thread_id.h"
#include "record/options_schema.h"
#include "record/recorder.h"
#include "record/statistics.h"
#include "report/csv.h"
#include "report/html.h"
#include "report/json.h"
#include "report/run_folder.h"
#include "report/run_meta.h"
#include "report/run_writers.h"
#include "report/terminal.h"
#include "session/cuda_time_extension.h"
#include "session/extension.h"
#include "session/live.h"
#include "session/report_builder.h"
#include "session/step_attribution.h"
#include "session/system_extension.h"
#include "session/trace_export.h"

namespace trainprof {

const char* StageName(Stage stage) { return stage == Stage::kTrain ? "train" : "validation"; }

namespace {

template <typename V>
report::Value ToValue(const V& v) {
  return std::visit([](const auto& x) { return report::Value(x); }, v);
}

}  // namespace

class SessionImpl {
 public:
  Options options;
  std::string run_dir;
  uint32_t epoch_id = 0;
  base::ClockPair start;

  mutable std::mutex mu;
  Stage stage = Stage::kTrain;
  int64_t epoch = 0;
  int64_t batch_size = 0;
  int64_t loader_workers = -1;  // SetDataLoaderWorkers()
  int64_t global_step = 0;
  int64_t profiler_step = 0;
  int64_t stage_index[2] = {0, 0};
  uint64_t step_begin = 0;
  // A step in clock ticks, turned into nanoseconds when the reports are built. A member type,
  // not one of this file's anonymous namespace: a unity build makes this file an included one,
  // where GCC warns about a class with a field of an anonymous-namespace type.
  struct StepTicks {
    Stage stage;
    int64_t epoch, batch_size, index_in_stage, profiler_step;
    uint64_t begin, end;
    int64_t tid;
  };
  std::vector<StepTicks> steps;
  std::vector<std::pair<std::string, std::string>> meta;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, report::Value>> extra_config;
  bool finished = false;
  std::string summary;
  std::vector<std::shared_ptr<session::Extension>> extensions;
  Status extension_status = Status::Ok();  // the first error of an extension's OnFinish()

  bool Recording(int64_t step) const {
    if (!options.time.enabled && !options.speed.enabled) return false;
    return options.schedule.ActionAt(step) != ProfilerAction::kNone;
  }

  void AddConfig(const std::string& key, report::Value v) {
    std::lock_guard<std::mutex> lock(mu);
    extra_config.emplace_back(key, std::move(v));
  }
  Status Finish();
  // The report of the finished session: step attribution (session/step_attribution.h), the
  // header (session/run_meta.h), the config, then one section per report.
  report::Report BuildReport(const std::vector<record::ThreadEvents>& threads,
                             const base::TickConverter& conv, int64_t end_ns,
                             session::TraceInput* trace);
  std::vector<record::StepMark> StepMarks(const base::TickConverter& conv) const;
  void AddConfig(report::Report& r) const;
  void AddSections(const std::vector<record::ThreadEvents>& threads,
                   session::Attribution attributed, const std::vector<record::StepMark>& marks,
                   const base::TickConverter& conv, int64_t end_ns, session::TraceInput* trace,
                   report::Report& r);
};

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
  if (impl_) (void)Finish();
}

StatusOr<std::unique_ptr<Session>> Session::Create(Options options) {
  TRAINPROF_RETURN_IF_ERROR(ValidateOptions(options));
  TRAINPROF_RETURN_IF_ERROR(options.schedule.Validate());
  auto impl = std::make_unique<SessionImpl>();
  impl->start = base::ClockPair::Now();
  TRAINPROF_ASSIGN_OR_RETURN(impl->run_dir,
                             report::CreateRunDir(options.output, impl->start.wall_ns));
  TRAINPROF_ASSIGN_OR_RETURN(impl->epoch_id, record::BeginEpoch(options.buffer.events_per_thread));
  impl->options = std::move(options);
  impl->step_begin = impl->start.ticks;
  std::shared_ptr<session::SystemExtension> system;
  if (impl->options.system.enabled) {
    system = std::make_shared<session::SystemExtension>(impl->options, impl->run_dir,
                                                        impl->start.steady_ns);
    impl->extensions.push_back(system);
  }
  if (impl->options.time.cuda_events) {
    impl->extensions.push_back(std::make_shared<session::CudaTimeExtension>());
  }
  if (session::LiveViewOn(impl->options)) {
    impl->extensions.push_back(std::make_shared<session::LiveExtension>(
        impl->options, session::LiveSources{impl->run_dir, impl->start, impl->epoch_id, system}));
  }
  record::SetRecording(impl->Recording(0));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

StatusOr<std::unique_ptr<Session>> Session::CreateFromConfigFile(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(Options options, LoadOptionsFile(path));
  return Create(std::move(options));
}

void Session::SetStage(Stage stage) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stage = stage;
  impl_->step_begin = base::Ticks();
}

void Session::SetEpoch(int64_t epoch) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->epoch = epoch;
  for (const auto& ext : impl_->extensions) ext->OnEpoch(epoch);
}

void Session::SetBatchSize(int64_t batch_size) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->batch_size = batch_size;
  for (const auto& ext : impl_->extensions) ext->OnBatchSize(batch_size);
}

void Session::Step() {
  const uint64_t now = base::Ticks();
  std::lock_guard<std::mutex> lock(impl_->mu);
  SessionImpl& s = *impl_;
  if (s.finished) return;
  const int st = s.stage == Stage::kTrain ? 0 : 1;
  s.steps.push_back({s.stage, s.epoch, s.batch_size, s.stage_index[st]++, s.profiler_step,
                     s.step_begin, now, base::ThisThreadId()});
  if (s.stage == Stage::kTrain) ++s.global_step;
  ++s.profiler_step;
  s.step_begin = now;
  record::SetRecording(s.Recording(s.profiler_step));
  for (const auto& ext : s.extensions) ext->OnStep(s.profiler_step);
}

namespace session {
Status AttachExtension(Session& session, std::shared_ptr<Extension> extension) {
  std::lock_guard<std::mutex> lock(session.impl_->mu);
  SessionImpl& s = *session.impl_;
  if (s.finished) {
    return FailedPrecondition("the session has finished; attach collectors before Finish()");
  }
  extension->OnStep(s.profiler_step);
  s.extensions.push_back(std::move(extension));
  return Status::Ok();
}
}  // namespace session

Stage Session::stage() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stage;
}
int64_t Session::epoch() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->epoch;
}
int64_t Session::global_step() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->global_step;
}
int64_t Session::profiler_step() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->profiler_step;
}
const std::string& Session::run_dir() const { return impl_->run_dir; }
const Options& Session::options() const { return impl_->options; }
const std::string& Session::summary() const { return impl_->summary; }

void Session::SetDataLoaderWorkers(int64_t workers) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->loader_workers = workers;
}

void Session::SetMeta(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->meta.emplace_back(key, value);
}

void Session::AddNote(const std::string& note) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->notes.push_back(note);
}

void Session::AddConfigValue(const std::string& key, bool v) { impl_->AddConfig(key, v); }
void Session::AddConfigValue(const std::string& key, int64_t v) { impl_->AddConfig(key, v); }
void Session::AddConfigValue(const std::string& key, double v) { impl_->AddConfig(key, v); }
void Session::AddConfigValue(const std::string& key, const std::string& v) {
  impl_->AddConfig(key, v);
}

Status Session::Finish() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Finish();
}

std::vector<record::StepMark> SessionImpl::StepMarks(const base::TickConverter& conv) const {
  std::vector<record::StepMark> marks;
  marks.reserve(steps.size());
  for (const StepTicks& s : steps) {
    marks.push_back({s.stage, s.epoch, s.batch_size, s.index_in_stage, s.profiler_step,
                     conv.ToNs(s.begin) - start.steady_ns, conv.ToNs(s.end) - start.steady_ns,
                     s.tid});
  }
  return marks;
}

report::Report SessionImpl::BuildReport(const std::vector<record::ThreadEvents>& threads,
                                        const base::TickConverter& conv, int64_t end_ns,
                                        session::TraceInput* trace) {
  const int64_t t0 = start.steady_ns;
  const std::vector<record::StepMark> marks = StepMarks(conv);
  session::Attribution attributed = session::AttributeEvents(
      {threads, marks, options.schedule, [&](uint64_t ticks) { return conv.ToNs(ticks) - t0; },
       stage, batch_size, options.buffer.events_per_thread},
      trace);

  report::Report r;
  r.kind = "profile";
  r.title = fmt::format("trainprof report: {}", options.output.name);
  r.diagnostics = std::move(attributed.diagnostics);
  report::AddRunMeta({start.wall_ns, t0, end_ns, run_dir, static_cast<int64_t>(marks.size()),
                      attributed.warmup_dropped},
                     r);
  for (const auto& [k, v] : meta) r.AddMeta(k, v);
  AddConfig(r);
  AddSections(threads, std::move(attributed), marks, conv, end_ns, trace, r);
  return r;
}

void SessionImpl::AddConfig(report::Report& r) const {
  base::ConfigSchema schema;
  Options copy = options;
  AddOptionsKeys(schema, copy);
  for (const auto& [k, v] : schema.CurrentValues()) r.config.emplace_back(k, ToValue(v));
  for (const auto& kv : extra_config) r.config.push_back(kv);
}

void SessionImpl::AddSections(const std::vector<record::ThreadEvents>& threads,
                              session::Attribution attributed,
                              const std::vector<record::StepMark>& marks,
                              const base::TickConverter& conv, int64_t end_ns,
                              session::TraceInput* trace, report::Report& r) {
  if (!notes.empty()) {
    report::Section& run = r.AddSection("run", "Run");
    run.notes = notes;
  }
  if (options.time.enabled) {
    session::TimeInput in;
    in.actions = record::ComputeActionStats(attributed.kept);
    in.wall_s = static_cast<double>(end_ns) * 1e-9;
    in.recorded_events = attributed.recorded;
    in.verbose = options.time.verbose;
    session::AddTimeSection(in, r);
  }
  if (options.speed.enabled) {
    session::AddSpeedSection(
        {record::ComputeSpeed(marks, attributed.step_scopes, options.speed.warmup_batches),
         options.speed.warmup_batches, loader_workers},
        r);
  }
  if (!extensions.empty()) {
    session::FinishContext ctx{options, run_dir, conv,  start.steady_ns, end_ns,
                               marks,   r,       trace, &threads};
    for (const auto& ext : extensions) {
      Status st = ext->OnFinish(ctx);
      if (!st.ok() && extension_status.ok()) extension_status = std::move(st);
    }
  }
  // Keys whose collector lives in an optional library the program did not attach.
  auto claimed = [&](std::string_view key) {
    return std::ranges::any_of(extensions, [&](const auto& e) { return e->Claims(key); });
  };
  auto not_attached = [&](bool enabled, std::string_view key, std::string_view what) {
    if (!enabled || claimed(key)) return;
    r.diagnostics.push_back(
        {report::DiagnosticId::kReportNotAvailable, 1,
         fmt::format("{} is true, but no collector for the {} is attached to this session: a "
                     "LibTorch program attaches one with trainprof::TorchProfiler::Attach(session) "
                     "(trainprof/torch.h); nothing was measured for it",
                     key, what)});
  };
  not_attached(options.memory.enabled, "memory.enabled", "operator and memory report");
  not_attached(options.model_summary.enabled, "model_summary.enabled", "model summary");
  not_attached(options.snapshot.enabled, "snapshot.enabled", "CUDA memory snapshot");
}

Status SessionImpl::Finish() {
  if (finished) return Status::Ok();
  finished = true;
  record::SetRecording(false);
  for (const auto& ext : extensions) ext->OnStop();
  const base::ClockPair end = base::ClockPair::Now();
  std::vector<record::ThreadEvents> threads = record::Collect(epoch_id);
  record::EndEpoch(epoch_id);
  const base::TickConverter conv = base::TickConverter::Fit(start, end);
  const int64_t end_ns = conv.ToNs(end.ticks) - start.steady_ns;

  session::TraceInput trace;
  trace.process_name = fmt::format("trainprof: {}", options.output.name);
  trace.pid = getpid();
  trace.start_unix_ns = start.wall_ns;
  report::Report r = BuildReport(threads, conv, end_ns, options.output.trace ? &trace : nullptr);

  std::vector<report::ExtraFile> extra;
  if (options.output.trace)
    extra.push_back(
        {"trace.json", [&] { return session::WriteTrace(trace, run_dir + "/trace.json"); }});
  Status first = report::WriteReportFiles(r, run_dir, options.output, &summary, extra);
  if (!extension_status.ok() && first.ok()) first = std::move(extension_status);
  if (options.output.print) fmt::print("{}", summary);
  return first;
}

}  // namespace trainprof
