// Scoped timers for a training loop. A scope records its begin and end, its thread and its
// nesting depth into a per-thread buffer: no lock and no allocation per event. When the
// profiling schedule skips a step (or no Session is active) a scope costs one branch.
//
//   void TrainStep() {
//     TRAINPROF_SCOPE("run_training_batch");                 // an action named by a literal
//     TRAINPROF_SCOPE_KIND("[Model].forward", trainprof::ActionKind::kForward);
//   }
//   auto fetch = trainprof::Profiled("[Data].fetch", [&] { return loader.Next(); });
//   Batch b = fetch();                                       // "decorator-style" profiling
//
// With TRAINPROF_ENABLE=0 every macro is empty and Profiled() returns the callable itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#ifndef TRAINPROF_ENABLE
#define TRAINPROF_ENABLE 1
#endif

namespace trainprof {

// What an action is, so reports can pick the concise set (time.verbose: false) and find the
// data loader, forward, backward and optimizer without guessing from names.
enum class ActionKind : uint8_t {
  kOther = 0,
  kLoop,        // run_training_epoch, run_training_batch, run_validation
  kDataLoader,  // [_TrainingEpochLoop].train_dataloader_next, [_EvaluationLoop].val_next
  kForward,
  kBackward,
  kOptimizer,
  kStep,           // training_step, validation_step
  kCommunication,  // collectives of data-parallel training: [DDP].all_reduce_gradients
};
const char* ActionKindName(ActionKind kind);

// A static description of an action; the recorder keeps only a pointer to it.
struct SourceLocation {
  const char* name;
  const char* file;
  int line;
  ActionKind kind;
};

// Names the calling thread in trace.json ("dataloader-0"). Copies the name.
void SetThreadName(std::string_view name);

// A SourceLocation for a name known only at run time, kept for the life of the process.
// Takes a lock: call it once per action, not per event.
const SourceLocation* InternAction(std::string_view name, ActionKind kind = ActionKind::kOther);

namespace internal {

// Set by the active Session when the schedule's current step is recorded.
extern std::atomic<bool> g_recording;
extern bool g_use_tsc;

struct ThreadState {
  void* buffer;
  uint32_t epoch;
  uint32_t depth;
};
extern thread_local ThreadState t_state __attribute__((tls_model("initial-exec")));

uint64_t SlowTicks() noexcept;  // steady_clock ns

// TSC cycles where the TSC is invariant, steady_clock ns otherwise.
inline uint64_t Ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_expect(g_use_tsc, 1)) return __rdtsc();
#endif
  return SlowTicks();
}

// Appends one finished scope to the calling thread's buffer (counts it as dropped when full).
// `cuda_slot`: its pair of CUDA events (time.cuda_events), 0 for none.
void RecordEvent(const SourceLocation* loc, uint64_t begin, uint64_t end, uint32_t depth,
                 uint32_t cuda_slot = 0) noexcept;

// time.cuda_events: each recorded scope also records a CUDA event on the current stream as it
// begins and ends (record/cuda_events.h). CudaMarkBegin returns the pair's slot (0: none left).
extern std::atomic<bool> g_cuda_events;
uint32_t CudaMarkBegin() noexcept;
void CudaMarkEnd(uint32_t slot) noexcept;

}  // namespace internal

// RAII timer: prefer the TRAINPROF_SCOPE macros, which give it a static SourceLocation.
class Scope {
 public:
  explicit Scope(const SourceLocation* loc) noexcept : loc_(loc) {
    if (internal::g_recording.load(std::memory_order_relaxed)) {
      depth_ = internal::t_state.depth++;
      if (internal::g_cuda_events.load(std::memory_order_relaxed)) {
        cuda_ = internal::CudaMarkBegin();
      }
      begin_ = internal::Ticks();
    }
  }
  ~Scope() {
    if (begin_ != 0) {
      const uint64_t end = internal::Ticks();
      if (cuda_ != 0) internal::CudaMarkEnd(cuda_);
      --internal::t_state.depth;
      internal::RecordEvent(loc_, begin_, end, depth_, cuda_);
    }
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const SourceLocation* loc_;
  uint64_t begin_ = 0;
  uint32_t depth_ = 0;
  uint32_t cuda_ = 0;
};

// A callable that runs `fn` inside a scope named `action`.
template <typename F>
class ProfiledCallable {
 public:
  ProfiledCallable(const SourceLocation* loc, F fn) : loc_(loc), fn_(std::move(fn)) {}
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    Scope scope(loc_);
    return fn_(std::forward<Args>(args)...);
  }

 private:
  const SourceLocation* loc_;
  F fn_;
};

#if TRAINPROF_ENABLE
template <typename F>
ProfiledCallable<F> Profiled(std::string_view action, F fn, ActionKind kind = ActionKind::kOther) {
  return ProfiledCallable<F>(InternAction(action, kind), std::move(fn));
}
#else
template <typename F>
F Profiled(std::string_view, F fn, ActionKind = ActionKind::kOther) {
  return fn;
}
#endif

}  // namespace trainprof

#define TRAINPROF_INTERNAL_CAT2_(a, b) a##b
#define TRAINPROF_INTERNAL_CAT_(a, b) TRAINPROF_INTERNAL_CAT2_(a, b)

#if TRAINPROF_ENABLE
#define TRAINPROF_SCOPE_KIND(name, kind)                                                          \
  static constexpr ::trainprof::SourceLocation TRAINPROF_INTERNAL_CAT_(trainprof_loc_, __LINE__){ \
      name, __FILE__, __LINE__, kind};                                                            \
  ::trainprof::Scope TRAINPROF_INTERNAL_CAT_(                                                     \
      trainprof_scope_, __LINE__)(&TRAINPROF_INTERNAL_CAT_(trainprof_loc_, __LINE__))
#else
#define TRAINPROF_SCOPE_KIND(name, kind) \
  do {                                   \
  } while (0)
#endif
#define TRAINPROF_SCOPE(name) TRAINPROF_SCOPE_KIND(name, ::trainprof::ActionKind::kOther)
