#include "session/live.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/text.h"
#include "base/thread_id.h"
#include "live/mlflow_live.h"
#include "live/snapshot.h"
#include "live/system_figures.h"
#include "live/world.h"
#include "report/format.h"
#include "report/tensorboard_export.h"
#include "system/proc_parse.h"

namespace trainprof::session {

using live::LiveSnapshot;

namespace {

constexpr size_t kLiveWindow = 100;  // steps the step-time figures cover

std::mutex g_channel_mu;
std::shared_ptr<LiveChannel> g_channel;

std::shared_ptr<LiveChannel> CurrentChannel() {
  std::lock_guard<std::mutex> lock(g_channel_mu);
  return g_channel;
}

int64_t LiveWallMs() { return base::WallNowNs() / 1'000'000; }

// The live MLflow run of output.mlflow, with the id the finished export will give the run, so
// that export takes it over. Null (said once) when the store cannot be written.
std::unique_ptr<live::MlflowLiveRun> BeginMlflow(const Options& o, const LiveSources& src) {
  if (o.output.mlflow.empty()) return nullptr;
  const std::string experiment = !o.output.mlflow_experiment.empty() ? o.output.mlflow_experiment
                                 : !o.output.name.empty()            ? o.output.name
                                                                     : "trainprof report: ";
  const std::string id =
      report::MlflowRunIdFor(src.run_dir, base::UtcIso8601(src.start.wall_ns), "profile");
  auto run = live::MlflowLiveRun::Begin(
      {.store = o.output.mlflow}, id,
      std::filesystem::path(src.run_dir).lexically_normal().filename().string(),
      src.start.wall_ns / 1'000'000, experiment);
  if (run.ok()) return std::move(*run);
  std::fprintf(stderr, "trainprof: live view: %s; the run goes on without live MLflow metrics\n",
               run.status().message().c_str());
  return nullptr;
}

}  // namespace

void SetLiveChannel(std::shared_ptr<LiveChannel> channel) {
  std::lock_guard<std::mutex> lock(g_channel_mu);
  g_channel = std::move(channel);
}

namespace {
std::mutex g_roles_mu;
std::optional<LiveRoleFigures> g_roles;  // the latest SetLiveRoles(), until a new live view
}  // namespace

bool LiveViewOn(const Options& o) {
  return o.live.mode != "off" || o.live.port != 0 || !o.output.mlflow.empty() ||
         !o.output.tensorboard.empty();
}

void SetLiveRoles(const LiveRoleFigures& roles) {
  std::lock_guard<std::mutex> lock(g_roles_mu);
  g_roles = roles;
}

void LiveExtension::AddRoles(LiveSnapshot& s) {
  std::lock_guard<std::mutex> lock(g_roles_mu);
  if (!g_roles) return;
  s.roles_step = g_roles->step;
  s.parameter_bytes = g_roles->parameter;
  s.gradient_bytes = g_roles->gradient;
  s.optimizer_state_bytes = g_roles->optimizer_state;
  s.other_bytes = g_roles->other;
}

void MailboxLiveChannel::Put(const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  latest_ = digest;
}

std::vector<std::string> MailboxLiveChannel::GatherAll() {
  std::lock_guard<std::mutex> lock(mu_);
  return gathered_;
}

std::string MailboxLiveChannel::Latest() {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

void MailboxLiveChannel::SetGathered(std::vector<std::string> digests) {
  std::lock_guard<std::mutex> lock(mu_);
  gathered_ = std::move(digests);
}

LiveExtension::LiveExtension(const Options& options, LiveSources sources)
    : mode_(options.live.mode),
      path_(sources.run_dir + "/live.json"),
      interval_s_(options.live.interval_s),
      src_(std::move(sources)) {
  {
    std::lock_guard<std::mutex> lock(g_roles_mu);
    g_roles.reset();  // an earlier session's figures are not this one's
  }
  redraw_ = mode_ == "view" && isatty(STDERR_FILENO);
  if (redraw_) term_ = std::make_unique<live::LiveTerminal>(stderr);
  if (!options.output.tensorboard.empty()) {  // live/* curves that grow while it trains
    auto tb = report::TensorBoardStream::Open(options.output.tensorboard);
    if (tb.ok())
      tb_ = std::move(*tb);
    else
      std::fprintf(stderr, "trainprof: live view: %s; the run goes on without live curves\n",
                   tb.status().message().c_str());
  }
  mlflow_ = BeginMlflow(options, src_);
  quiet_ = mode_ == "off" || mode_ == "file";  // the page, the trackers or live.json alone
  if (options.live.port != 0) StartPage(options.live.host, static_cast<int>(options.live.port));
  thread_ = std::thread([this] { Run(); });
}

LiveExtension::~LiveExtension() { OnStop(); }

void LiveExtension::OnStep(int64_t profiler_step) {
  const int64_t now = base::SteadyNowNs() - src_.start.steady_ns;
  std::lock_guard<std::mutex> lock(mu_);
  if (loop_tid_ == 0) loop_tid_ = base::ThisThreadId();
  if (profiler_step == steps_) return;  // the call at attach
  steps_ = profiler_step;
  bounds_.push_back(now);
  batches_.push_back(batch_size_);
  if (bounds_.size() > 2 * (kLiveWindow + 1)) {
    bounds_.erase(bounds_.begin(), bounds_.end() - static_cast<ptrdiff_t>(kLiveWindow + 1));
    batches_.erase(batches_.begin(), batches_.end() - static_cast<ptrdiff_t>(kLiveWindow + 1));
  }
}

void LiveExtension::OnBatchSize(int64_t batch_size) {
  std::lock_guard<std::mutex> lock(mu_);
  batch_size_ = batch_size;
}

void LiveExtension::OnEpoch(int64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  epoch_ = epoch;
}

void LiveExtension::OnStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Tick(true);
  if (term_ != nullptr) term_->End(last_view_);  // the rows given back, the last view left
}

Status LiveExtension::OnFinish(FinishContext& ctx) {
  if (mlflow_ == nullptr) return Status::Ok();
  const bool failed = !report::MetaText(ctx.report, "stopped_by").empty();
  Warn(mlflow_->End(failed, LiveWallMs()));
  return Status::Ok();
}

void LiveExtension::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  const auto every = std::chrono::duration<double>(interval_s_);
  while (!cv_.wait_for(lock, every, [this] { return stop_; })) {
    lock.unlock();
    Tick(false);
    lock.lock();
  }
}

// One snapshot: built from a copy of the window, the scopes recorded since the last tick, this
// process's and the GPUs' figures, the world's ranks; then published.
void LiveExtension::Tick(bool finished) {
  const int64_t now = base::SteadyNowNs() - src_.start.steady_ns;
  std::vector<int64_t> bounds, batches;
  int64_t steps = 0, batch = 0, epoch = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto from = static_cast<ptrdiff_t>(
        bounds_.size() > kLiveWindow + 1 ? bounds_.size() - kLiveWindow - 1 : 0);
    bounds.assign(bounds_.begin() + from, bounds_.end());
    batches.assign(batches_.begin() + from, batches_.end());
    steps = steps_;
    batch = batch_size_;
    epoch = epoch_;
  }
  LiveSnapshot s = live::BuildLiveSnapshot(steps, bounds, batches, now, batch);
  s.finished = finished;
  if (epoch >= 0) s.epoch = epoch;
  AddSplit(now, finished, s);
  AddProcessFigures(now, s);
  AddDevices(s);
  AddRoles(s);
  live::AddLiveVerdict(s);
  AddWorld(s);
  Publish(s);
}

// The split of the loop thread's time (the thread that calls Step()) over the window before the
// last one: a tick late, so a scope that was running at that window's end has ended and is
// charged its part of it. The last snapshot tells everything up to now.
void LiveExtension::AddSplit(int64_t now, bool finished, LiveSnapshot& s) {
  int64_t loop_tid = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    loop_tid = loop_tid_;
  }
  const base::TickConverter conv = base::TickConverter::Fit(src_.start, base::ClockPair::Now());
  record::ScanNew(src_.record_epoch, cursor_, [&](int64_t tid, const record::Event& e) {
    if (tid == loop_tid && e.loc != nullptr)  // on `now`'s clock: ns after the run's start
      split_.Add(e.loc->kind, conv.ToNs(e.begin) - src_.start.steady_ns,
                 conv.ToNs(e.end) - src_.start.steady_ns);
  });
  if (finished) {
    s.split = last_split_ = split_.Take(std::max<int64_t>(told_until_ns_, 0), now);
    told_until_ns_ = split_at_ns_ = now;
    return;
  }
  // A window much shorter than a tick says little: the last split stands.
  if (now - split_at_ns_ < static_cast<int64_t>(interval_s_ * 0.5e9)) {
    s.split = last_split_;
    return;
  }
  if (told_until_ns_ >= 0 || split_at_ns_ > 0) {
    last_split_ = split_.Take(std::max<int64_t>(told_until_ns_, 0), split_at_ns_);
    told_until_ns_ = split_at_ns_;
  }
  s.split = last_split_;
  split_at_ns_ = now;
}

// RSS and its growth over the last minute, and the CPU share since the last tick, from
// /proc/self/stat.
void LiveExtension::AddProcessFigures(int64_t now, LiveSnapshot& s) {
  StatusOr<std::string> text = base::ReadFile("/proc/self/stat");
  if (!text.ok()) return;
  StatusOr<system::PidStat> p = system::ParsePidStat(*text);
  if (!p.ok()) return;
  s.rss_bytes = static_cast<double>(p->rss_pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
  rss_.Add(now, *s.rss_bytes);
  s.rss_growth_bytes_per_min = rss_.GrowthPerMinute();
  const uint64_t ticks = p->utime + p->stime;
  if (cpu_at_ns_ > 0 && now > cpu_at_ns_)
    s.cpu_pct = 100.0 * static_cast<double>(ticks - cpu_ticks_) /
                static_cast<double>(sysconf(_SC_CLK_TCK)) /
                (static_cast<double>(now - cpu_at_ns_) * 1e-9);
  cpu_ticks_ = ticks;
  cpu_at_ns_ = now;
}

// Each GPU of the system sampler's latest sample.
void LiveExtension::AddDevices(LiveSnapshot& s) const {
  if (src_.system != nullptr) s.devices = live::LiveDevices(src_.system->sampler());
}

// A multi-rank run: every rank puts its digest; rank 0 reads the world's.
void LiveExtension::AddWorld(LiveSnapshot& s) {
  const std::shared_ptr<LiveChannel> channel = CurrentChannel();
  if (channel == nullptr) return;
  const int64_t now_ms = LiveWallMs();
  channel->Put(live::LiveRankDigest(s, channel->rank(), now_ms));
  quiet_ =
      quiet_ || channel->rank() != 0;  // rank 0 shows the world; the others only put their digest
  if (channel->rank() == 0)
    s.world =
        live::BuildLiveWorld(channel->GatherAll(), channel->world_size(), now_ms, interval_s_);
}

// live.json (replaced whole), the live TensorBoard and MLflow metrics, the view on stderr. An
// output that cannot be written is said once: the run goes on.
void LiveExtension::Publish(const LiveSnapshot& s) {
  const std::string json = live::LiveJson(s);
  Warn(base::WriteFileAtomically(path_, json));
  if (page_ != nullptr) page_->Publish(json);
  const auto scalars = live::LiveScalars(s);
  if (tb_ != nullptr) Warn(tb_->Add(s.step, scalars));
  if (mlflow_ != nullptr) Warn(mlflow_->Log(s.step, LiveWallMs(), scalars));
  if (quiet_) {
  } else if (term_ != nullptr) {
    last_view_ = live::LiveView(s, term_->Columns() - 1);
    term_->Draw(last_view_);
  } else {
    std::fprintf(stderr, "%s\n", live::LiveLine(s).c_str());
    std::fflush(stderr);
  }
}

void LiveExtension::StartPage(const std::string& host, int port) {
  auto page = live::LivePage::Start(host, port);
  if (!page.ok()) {
    std::fprintf(stderr, "trainprof: live view: %s; the run goes on without the page\n",
                 page.status().message().c_str());
    return;
  }
  page_ = std::move(*page);
  std::fprintf(stderr, "trainprof: live page at http://%s:%d/\n", host.c_str(), page_->port());
}

void LiveExtension::Warn(const Status& st) {
  if (st.ok() || warned_) return;
  warned_ = true;
  std::fprintf(stderr, "trainprof: live view: %s; the run goes on\n", st.message().c_str());
}

}  // namespace trainprof::session
