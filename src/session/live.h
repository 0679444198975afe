// The live view of a running Session (issue 57): every live.interval_s a background thread
// builds a snapshot of the run (report/live_snapshot.h) from the steps' end times the Session
// hands it (OnStep: one clock read and a push under the view's own lock, off the scopes'
// path), writes it as <run folder>/live.json (a whole file renamed over the old one, so
// `trainprof watch RUN_DIR` reads it from another terminal), and prints it on stderr: one line
// a tick (live.mode: lines, and view when stderr is not a terminal), or one status line redrawn
// in place (view on a terminal). A folder that cannot be written is said once; the run goes on.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "report/live_snapshot.h"
#include "report/tensorboard_export.h"
#include "session/extension.h"
#include "trainprof/status.h"

namespace trainprof::session {

class LiveExtension : public Extension {
 public:
  LiveExtension(const Options& options, std::string run_dir, int64_t t0_steady_ns);
  ~LiveExtension() override;
  void OnStep(int64_t profiler_step) override;
  void OnBatchSize(int64_t batch_size) override;
  void OnStop() override;  // a last snapshot (finished), then the thread ends
  Status OnFinish(FinishContext&) override { return Status::Ok(); }

 private:
  void Run();
  void Tick(bool finished);
  void AddProcessFigures(int64_t now, report::LiveSnapshot& s);
  void Publish(const report::LiveSnapshot& s);

  std::string mode_, path_;
  double interval_s_;
  int64_t t0_ns_;
  bool redraw_ = false;  // view on a terminal: one line redrawn in place
  bool warned_ = false;  // live.json or the TensorBoard file could not be written (said once)
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<int64_t> bounds_{0};   // the last steps' boundaries, ns after t0 (kLiveWindow + 1)
  std::vector<int64_t> batches_{0};  // the batch size of the step ending at each boundary
  int64_t steps_ = 0, batch_size_ = 0;
  uint64_t cpu_ticks_ = 0;
  int64_t cpu_at_ns_ = 0;
  std::unique_ptr<report::TensorBoardStream> tb_;  // output.tensorboard's live/* curves
  std::thread thread_;
};

}  // namespace trainprof::session
