// The live view of a running Session (issue 57): every live.interval_s a background thread
// builds a snapshot of the run (live/snapshot.h): the step figures from the steps' end
// times the Session hands it (OnStep: one clock read and a push under the view's own lock), the
// split of the loop into its scopes' kinds (read from the recorder's published events,
// record::ScanNew, off the scopes' path), the GPUs from the system sampler's latest sample, this
// process's CPU and memory, and the verdict. It writes the snapshot as <run folder>/live.json (a
// whole file renamed over the old one, so `trainprof watch RUN_DIR` reads it from another
// terminal), as live TensorBoard curves and MLflow metrics (output.tensorboard, output.mlflow),
// and on stderr: one line a tick (live.mode: lines, and view when stderr is not a terminal), or
// a view that owns the terminal's bottom rows (view on a terminal). With a LiveChannel set (a
// multi-rank run), every rank puts its digest and rank 0 shows the world. A folder that cannot
// be written is said once; the run goes on.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "live/mlflow_live.h"
#include "live/page.h"
#include "live/snapshot.h"
#include "live/split.h"
#include "live/terminal.h"
#include "record/recorder.h"
#include "report/tensorboard_export.h"
#include "session/extension.h"
#include "session/rss_trend.h"
#include "session/system_extension.h"
#include "trainprof/status.h"

namespace trainprof::session {

// How the ranks of a multi-rank run see each other live: each rank puts its digest
// (live::LiveRankDigest), rank 0 reads every rank's latest. The job sets it over the channel
// its ranks already share (the c10d store of `trainprof profile`); no new server.
class LiveChannel {
 public:
  virtual ~LiveChannel() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  virtual void Put(const std::string& digest) = 0;   // errors are the channel's to ignore
  virtual std::vector<std::string> GatherAll() = 0;  // rank 0: each rank's latest ("" none)
};
// The channel every live view of this process uses from its next tick; null: none.
void SetLiveChannel(std::shared_ptr<LiveChannel> channel);

// Memory by role at the end of a step, sampled in the loop (the Python package's
// trainprof.torch, the LibTorch job's TrackRoles): every live view of this process shows the
// latest from its next tick; a new live view starts with none.
struct LiveRoleFigures {
  int64_t step = 0;
  double parameter = 0, gradient = 0;
  std::optional<double> optimizer_state, other;  // nullopt: not measured
};
void SetLiveRoles(const LiveRoleFigures& roles);

// Whether a Session with these options runs a live view: for its print, its page, or the
// trackers that grow while it trains.
bool LiveViewOn(const Options& options);

// A channel whose exchange runs elsewhere (the Python package's thread over torch.distributed's
// store, so the live thread never waits for the GIL): Put keeps this rank's latest digest for
// Latest(); GatherAll gives what SetGathered last handed over.
class MailboxLiveChannel : public LiveChannel {
 public:
  MailboxLiveChannel(int64_t rank, int64_t world_size) : rank_(rank), world_size_(world_size) {}
  int64_t rank() const override { return rank_; }
  int64_t world_size() const override { return world_size_; }
  void Put(const std::string& digest) override;
  std::vector<std::string> GatherAll() override;
  std::string Latest();
  void SetGathered(std::vector<std::string> digests);

 private:
  int64_t rank_, world_size_;
  std::mutex mu_;
  std::string latest_;
  std::vector<std::string> gathered_;
};

// What the live view reads besides the Session's calls.
struct LiveSources {
  std::string run_dir;
  base::ClockPair start;                    // the session's start
  uint32_t record_epoch = 0;                // the recorder's epoch of the session
  std::shared_ptr<SystemExtension> system;  // null when system.enabled is off: no GPU figures
};

class LiveExtension : public Extension {
 public:
  LiveExtension(const Options& options, LiveSources sources);
  ~LiveExtension() override;
  void OnStep(int64_t profiler_step) override;
  void OnBatchSize(int64_t batch_size) override;
  void OnEpoch(int64_t epoch) override;
  void OnStop() override;  // a last snapshot (finished), then the thread ends
  Status OnFinish(FinishContext& ctx) override;

 private:
  void Run();
  void Tick(bool finished);
  void AddSplit(int64_t now, bool finished, live::LiveSnapshot& s);
  void AddProcessFigures(int64_t now, live::LiveSnapshot& s);
  void AddDevices(live::LiveSnapshot& s) const;
  void AddWorld(live::LiveSnapshot& s);
  static void AddRoles(live::LiveSnapshot& s);
  void Publish(const live::LiveSnapshot& s);
  void Warn(const Status& st);
  void StartPage(const std::string& host, int port);

  std::string mode_, path_;
  double interval_s_;
  LiveSources src_;
  bool redraw_ = false;  // view on a terminal
  bool warned_ = false;  // an output could not be written (said once)
  bool quiet_ = false;   // a rank other than 0: live.json and the digest, nothing printed
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<int64_t> bounds_{0};   // the last steps' boundaries, ns after t0 (kLiveWindow + 1)
  std::vector<int64_t> batches_{0};  // the batch size of the step ending at each boundary
  int64_t steps_ = 0, batch_size_ = 0, epoch_ = -1, loop_tid_ = 0;
  // Live thread only:
  record::ScanCursor cursor_;
  live::LiveSplitter split_;
  int64_t split_at_ns_ = 0;     // the end of the last window
  int64_t told_until_ns_ = -1;  // the end of the last window told (a tick behind), -1: none
  std::optional<live::LiveSplit> last_split_;
  uint64_t cpu_ticks_ = 0;
  int64_t cpu_at_ns_ = 0;
  RssTrend rss_;  // RSS growth per minute, after the warm-up
  std::vector<std::string> last_view_;
  std::unique_ptr<live::LiveTerminal> term_;
  std::unique_ptr<report::TensorBoardStream> tb_;  // output.tensorboard's live/* curves
  std::unique_ptr<live::MlflowLiveRun> mlflow_;    // output.mlflow's run, RUNNING until the end
  std::unique_ptr<live::LivePage> page_;           // live.port's page; null: none
  std::thread thread_;
};

}  // namespace trainprof::session
