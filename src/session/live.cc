#include "session/live.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "base/atomic_file.h"
#include "report/live_snapshot.h"
#include "report/tensorboard_export.h"
#include "system/proc_parse.h"

namespace trainprof::session {

using report::LiveSnapshot;

namespace {

constexpr size_t kLiveWindow = 100;  // steps the step-time figures cover

int64_t LiveSteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

LiveExtension::LiveExtension(const Options& options, std::string run_dir, int64_t t0_steady_ns)
    : mode_(options.live.mode),
      path_(std::move(run_dir) + "/live.json"),
      interval_s_(options.live.interval_s),
      t0_ns_(t0_steady_ns) {
  redraw_ = mode_ == "view" && isatty(STDERR_FILENO);
  if (!options.output.tensorboard.empty()) {  // live/* curves that grow while it trains
    auto tb = report::TensorBoardStream::Open(options.output.tensorboard);
    if (tb.ok())
      tb_ = std::move(*tb);
    else
      std::fprintf(stderr, "trainprof: live view: %s; the run goes on without live curves\n",
                   tb.status().message().c_str());
  }
  thread_ = std::thread([this] { Run(); });
}

LiveExtension::~LiveExtension() { OnStop(); }

void LiveExtension::OnStep(int64_t profiler_step) {
  const int64_t now = LiveSteadyNs() - t0_ns_;
  std::lock_guard<std::mutex> lock(mu_);
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

void LiveExtension::OnStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Tick(true);
  if (redraw_) std::fputs("\n", stderr);  // leave the last status line standing
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

// One snapshot: built from a copy of the window, with this process's figures; written to
// live.json, to the live TensorBoard file and on stderr.
void LiveExtension::Tick(bool finished) {
  const int64_t now = LiveSteadyNs() - t0_ns_;
  std::vector<int64_t> bounds, batches;
  int64_t steps = 0, batch = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto from = static_cast<ptrdiff_t>(
        bounds_.size() > kLiveWindow + 1 ? bounds_.size() - kLiveWindow - 1 : 0);
    bounds.assign(bounds_.begin() + from, bounds_.end());
    batches.assign(batches_.begin() + from, batches_.end());
    steps = steps_;
    batch = batch_size_;
  }
  LiveSnapshot s = report::BuildLiveSnapshot(steps, bounds, batches, now, batch);
  s.finished = finished;
  AddProcessFigures(now, s);
  Publish(s);
}

// RSS, and the CPU share since the last tick, from /proc/self/stat.
void LiveExtension::AddProcessFigures(int64_t now, LiveSnapshot& s) {
  StatusOr<std::string> text = base::ReadFile("/proc/self/stat");
  if (!text.ok()) return;
  StatusOr<system::PidStat> p = system::ParsePidStat(*text);
  if (!p.ok()) return;
  s.rss_bytes = static_cast<double>(p->rss_pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
  const uint64_t ticks = p->utime + p->stime;
  if (cpu_at_ns_ > 0 && now > cpu_at_ns_)
    s.cpu_pct = 100.0 * static_cast<double>(ticks - cpu_ticks_) /
                static_cast<double>(sysconf(_SC_CLK_TCK)) /
                (static_cast<double>(now - cpu_at_ns_) * 1e-9);
  cpu_ticks_ = ticks;
  cpu_at_ns_ = now;
}

// live.json (replaced whole), the live TensorBoard events, the line on stderr. A file that
// cannot be written is said once: the run goes on.
void LiveExtension::Publish(const LiveSnapshot& s) {
  Status written = base::WriteFileAtomically(path_, report::LiveJson(s));
  if (tb_ != nullptr) {
    std::vector<std::pair<std::string, double>> scalars;
    auto put = [&](const char* tag, const std::optional<double>& v) {
      if (v) scalars.emplace_back(tag, *v);
    };
    put("live/step_time_s", s.step_median_s);
    put("live/steps_per_s", s.steps_per_s);
    put("live/samples_per_s", s.samples_per_s);
    put("live/rss_bytes", s.rss_bytes);
    put("live/cpu_pct", s.cpu_pct);
    if (Status tb = tb_->Add(s.step, scalars); written.ok()) written = std::move(tb);
  }
  if (!written.ok() && !warned_) {
    warned_ = true;
    std::fprintf(stderr, "trainprof: live view: %s; the run goes on\n", written.message().c_str());
  }
  const std::string line = report::LiveLine(s);
  if (redraw_)
    std::fprintf(stderr, "\r\033[2K%s", line.c_str());
  else
    std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace trainprof::session
