// `trainprof run`'s live view (issue 57): while the command runs, a snapshot every
// live.interval_s from what the run can see: the steps, the split and the verdict of a Session
// inside the command (its <run folder>/session/live.json, when its live view is on), and
// always the command's whole process tree (CPU, RSS) and the GPUs from the run's sampler. It is
// written as <run folder>/live.json (so `trainprof watch` works on run folders), printed as a
// line (live.mode lines or view) and served as the live page (live.port, --live-port).
//
//   auto live = RunLiveView::Start(options, run_dir, sampler, start.steady_ns);  // null: off
//   ... the command runs ...
//   live.reset();   // the last snapshot, finished
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "live/page.h"
#include "system/sampler.h"
#include "trainprof/options.h"

namespace trainprof::cli {

class RunLiveView {
 public:
  // Null when live.mode is off and there is no live.port. A port that cannot be had is said in
  // one line; the view goes on without the page.
  static std::unique_ptr<RunLiveView> Start(const Options& o, const std::string& run_dir,
                                            const system::SystemSampler& sampler,
                                            int64_t t0_steady_ns);
  ~RunLiveView();  // a last snapshot (finished), then the thread ends

 private:
  RunLiveView(const Options& o, std::string run_dir, const system::SystemSampler& sampler,
              int64_t t0_steady_ns);
  void Run();
  void Tick(bool finished);

  std::string dir_;
  const system::SystemSampler& sampler_;
  int64_t t0_ns_;
  double interval_s_;
  bool print_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::optional<double> last_rss_;
  std::unique_ptr<live::LivePage> page_;
  std::thread thread_;
};

}  // namespace trainprof::cli
