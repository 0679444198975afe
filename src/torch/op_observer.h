// The operator observer: a global RecordFunction callback (at::addGlobalCallback) that times
// every LibTorch operator, and a memory reporter (c10::MemoryReportingInfoBase, installed as the
// thread's PROFILER_STATE) that hears every allocation and free of the CPU and CUDA allocators.
// Each thread appends to its own buffer; nothing is locked or allocated per call once a
// thread's buffer has grown.
//
//   auto obs = torchlib::OpObserver::Install({.record_shapes = true});   // one per process
//   if (!obs.ok()) ...;                              // another observer or LibTorch's profiler
//   (*obs)->SetStep(0, /*observe=*/true);            // from Session::Step()
//   ... training ...
//   (*obs)->SetStep(5, /*observe=*/false);
//   torchlib::OpData data = (*obs)->Collect();       // times in ticks
//   torchlib::ToSessionTime(data, conv, t0_ns);      // now in ns since the session start
#pragma once

#include <cstdint>
#include <memory>

#include "base/clock.h"
#include "trace/inprocess/op_data.h"
#include "trainprof/status.h"

namespace trainprof::torchlib {

struct ObserverOptions {
  bool record_shapes = false;
  int64_t events_per_thread = 1 << 20;  // operator calls and allocator reports kept per thread
  // A GPU collector's hooks (cupti::Collector::PushCall / PopCall): called as each observed call
  // begins, with its id (OpEvent::id, the RecordFunction handle), and as it ends.
  void (*on_call_begin)(uint64_t id) = nullptr;
  void (*on_call_end)() = nullptr;
};

class OpObserver {
 public:
  // Registers the callback (disabled until SetStep(.., true)) and installs the memory reporter
  // on the calling thread; threads the autograd engine or at::launch starts from it inherit it.
  // Errors (FailedPrecondition): an observer is already installed in this process; LibTorch's
  // own profiler is enabled on this thread.
  static StatusOr<std::unique_ptr<OpObserver>> Install(const ObserverOptions& options);
  // Removes the callback and the reporter. Call it on the thread that installed it; elsewhere
  // the reporter stays on that thread but hears nothing.
  ~OpObserver();

  // The schedule's step begins; `observe` turns recording on or off. Thread-safe.
  void SetStep(int64_t step, bool observe);
  // Stops or resumes observing without changing the step (a model summary's forward pass is not
  // part of the training). Thread-safe.
  void Suspend(bool suspended);
  // Stops observing and returns every call and allocator report recorded, sorted by time.
  // Times (begin_ns, dur_ns, self_ns, t_ns) are still in ticks: see ToSessionTime().
  OpData Collect();

  OpObserver(const OpObserver&) = delete;
  OpObserver& operator=(const OpObserver&) = delete;

 private:
  OpObserver() = default;
  void Apply();
  struct State;
  std::unique_ptr<State> state_;
};

// Converts the tick times of Collect()'s data to ns since `t0_ns` (steady_clock).
void ToSessionTime(OpData& data, const base::TickConverter& conv, int64_t t0_ns);

}  // namespace trainprof::torchlib
