#include "cli/run_live.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "live/snapshot.h"
#include "live/system_figures.h"

namespace trainprof::cli {

std::unique_ptr<RunLiveView> RunLiveView::Start(const Options& o, const std::string& run_dir,
                                                const system::SystemSampler& sampler,
                                                int64_t t0_steady_ns) {
  if (o.live.mode == "off" && o.live.port == 0) return nullptr;
  return std::unique_ptr<RunLiveView>(new RunLiveView(o, run_dir, sampler, t0_steady_ns));
}

RunLiveView::RunLiveView(const Options& o, std::string run_dir,
                         const system::SystemSampler& sampler, int64_t t0_steady_ns)
    : dir_(std::move(run_dir)),
      sampler_(sampler),
      t0_ns_(t0_steady_ns),
      interval_s_(o.live.interval_s),
      print_(o.live.mode != "off") {
  if (o.live.port != 0) {
    auto page = live::LivePage::Start(o.live.host, static_cast<int>(o.live.port));
    if (page.ok()) {
      page_ = std::move(*page);
      fmt::print(stderr, "trainprof run: live page at http://{}:{}/\n", o.live.host, page_->port());
    } else {
      fmt::print(stderr, "trainprof run: {}; the run goes on without the live page\n",
                 page.status().message());
    }
  }
  thread_ = std::thread([this] { Run(); });
}

RunLiveView::~RunLiveView() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Tick(true);
}

void RunLiveView::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (
      !cv_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return stop_; })) {
    lock.unlock();
    Tick(false);
    lock.lock();
  }
}

// The command's Session's snapshot when it writes one, the tree and the GPUs always, the
// verdict from what is known.
void RunLiveView::Tick(bool finished) {
  live::LiveSnapshot s;
  if (StatusOr<std::string> text = base::ReadFile(dir_ + "/session/live.json"); text.ok()) {
    if (auto inner = live::ParseLiveJson(*text, "session/live.json"); inner.ok()) s = *inner;
  }
  s.elapsed_s = static_cast<double>(base::SteadyNowNs() - t0_ns_) * 1e-9;
  s.finished = finished;
  s.rss_bytes = last_rss_;                // the tree's, kept when the last sample no longer sees it
  live::AddLiveProcessTree(sampler_, s);  // the command's whole tree, not one process
  last_rss_ = s.rss_bytes;
  s.devices = live::LiveDevices(sampler_);
  s.verdict.clear();
  s.finding.clear();
  live::AddLiveVerdict(s);
  const std::string json = live::LiveJson(s);
  (void)base::WriteFileAtomically(dir_ + "/live.json", json);  // the folder is the run's own
  if (page_ != nullptr) page_->Publish(json);
  if (print_) {
    std::fprintf(stderr, "%s\n", live::LiveLine(s).c_str());
    std::fflush(stderr);
  }
}

}  // namespace trainprof::cli
