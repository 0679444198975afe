#include "torch/op_observer.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/published_log.h"
#include "base/thread_id.h"

namespace trainprof::torchlib {
namespace {

constexpr uint32_t kMaxDepth = 128;

// An operator call in progress on a thread. `ev` is what Collect() returns, in ticks: begin_ns
// holds the begin tick until the call ends.
struct Frame {
  const at::RecordFunction* fn;
  uint64_t child_ticks;
  OpEvent ev;
};

// Names and shape strings, shared by all threads (interned under the registry lock; each thread
// caches the ids it has seen).
struct Strings {
  std::deque<std::string> names;
  std::unordered_map<std::string_view, uint32_t> name_ids;
  std::vector<std::string> shapes{""};
  std::unordered_map<uint64_t, uint32_t> shape_ids;  // by hash of the dims
};

struct ThreadLog {
  ThreadLog(int64_t thread_id, int64_t capacity) : tid(thread_id), ops(capacity), mem(capacity) {}
  int64_t tid;
  base::PublishedLog<OpEvent> ops;  // times in ticks
  base::PublishedLog<MemEvent> mem;
  Frame stack[kMaxDepth];
  uint32_t depth = 0;
  std::atomic<uint64_t> too_deep{0};
  std::unordered_map<std::string_view, uint32_t> name_cache;
  std::unordered_map<uint64_t, uint32_t> shape_cache;
};

struct Registry {
  std::mutex mu;
  bool installed = false;
  uint64_t generation = 0;
  int64_t capacity = 0;
  std::vector<std::unique_ptr<ThreadLog>> logs;
  Strings strings;
};

Registry& GetRegistry() {
  static Registry* r = new Registry();  // never destroyed: callbacks may run during exit
  return *r;
}

std::atomic<bool> g_observing{false};
std::atomic<int64_t> g_step{0};
std::atomic<uint64_t> g_generation{0};
bool g_record_shapes = false;  // set before the callback is registered
// A GPU collector's hooks (ObserverOptions), set before the callback is registered.
void (*g_call_begin)(uint64_t) = nullptr;
void (*g_call_end)() = nullptr;

thread_local ThreadLog* t_log = nullptr;
thread_local uint64_t t_generation = 0;

// The calling thread's log of the current observer, created on first use.
ThreadLog* Log() {
  const uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (__builtin_expect(t_generation == gen && t_log != nullptr, 1)) return t_log;
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.installed || r.generation != gen) return nullptr;
  r.logs.push_back(std::make_unique<ThreadLog>(base::ThisThreadId(), r.capacity));
  t_log = r.logs.back().get();
  t_generation = gen;
  return t_log;
}

ThreadLog* LogIfAny() {
  return t_generation == g_generation.load(std::memory_order_acquire) ? t_log : nullptr;
}

uint32_t InternName(ThreadLog* t, const char* name) {
  const std::string_view view(name == nullptr ? "" : name);
  auto it = t->name_cache.find(view);
  if (__builtin_expect(it != t->name_cache.end(), 1)) return it->second;
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto g = r.strings.name_ids.find(view);
  if (g == r.strings.name_ids.end()) {
    r.strings.names.emplace_back(view);
    g = r.strings.name_ids
            .emplace(r.strings.names.back(), static_cast<uint32_t>(r.strings.names.size() - 1))
            .first;
  }
  t->name_cache.emplace(g->first, g->second);
  return g->second;
}

// Input shapes as PyTorch prints them: [[64, 1, 28, 28], [6], []] (non-tensors are []).
uint32_t InternShapes(ThreadLog* t, const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  uint64_t h = 1469598103934665603ull;  // FNV-1a over (rank, dims...) of each input
  auto mix = [&h](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  for (const c10::IValue& v : inputs) {
    if (v.isTensor() && v.toTensor().defined()) {
      const auto sizes = v.toTensor().sizes();
      mix(sizes.size() + 1);
      for (int64_t d : sizes) mix(static_cast<uint64_t>(d));
    } else {
      mix(0);
    }
  }
  mix(inputs.size());
  auto it = t->shape_cache.find(h);
  if (__builtin_expect(it != t->shape_cache.end(), 1)) return it->second;
  std::string text = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) text += ", ";
    const c10::IValue& v = inputs[i];
    if (v.isTensor() && v.toTensor().defined()) {
      text += fmt::format("[{}]", fmt::join(v.toTensor().sizes(), ", "));
    } else {
      text += "[]";
    }
  }
  text += "]";
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto [g, added] = r.strings.shape_ids.emplace(h, 0);
  if (added) {
    r.strings.shapes.push_back(std::move(text));
    g->second = static_cast<uint32_t>(r.strings.shapes.size() - 1);
  }
  t->shape_cache.emplace(h, g->second);
  return g->second;
}

std::unique_ptr<at::ObserverContext> OnOpStart(const at::RecordFunction& fn) {
  if (!g_observing.load(std::memory_order_relaxed)) return nullptr;
  ThreadLog* t = Log();
  if (t == nullptr) return nullptr;
  if (t->depth == kMaxDepth) {
    t->too_deep.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const uint32_t name = InternName(t, fn.name());
  const uint32_t shapes = g_record_shapes ? InternShapes(t, fn) : 0;
  Frame& f = t->stack[t->depth];
  f = Frame{};
  f.fn = &fn;
  f.ev.name = name;
  f.ev.shapes = shapes;
  f.ev.depth = t->depth++;
  f.ev.backward = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
  f.ev.step = g_step.load(std::memory_order_relaxed);
  if (g_call_begin != nullptr) {
    f.ev.id = fn.handle();
    g_call_begin(f.ev.id);
  }
  f.ev.begin_ns = static_cast<int64_t>(base::Ticks());
  return nullptr;
}

// Also runs when the operator throws (RecordFunction ends in its destructor), so the stack
// stays balanced.
void OnOpEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  const uint64_t end = base::Ticks();
  ThreadLog* t = LogIfAny();
  if (t == nullptr) return;
  uint32_t d = t->depth;
  while (d > 0 && t->stack[d - 1].fn != &fn) --d;
  if (d == 0) return;  // began before the observer was on
  if (g_call_end != nullptr) {
    for (uint32_t k = d - 1; k < t->depth; ++k) {
      if (t->stack[k].ev.id != 0) g_call_end();  // this call and any that never ended
    }
  }
  t->depth = d - 1;
  Frame& f = t->stack[d - 1];
  const uint64_t dur = end - static_cast<uint64_t>(f.ev.begin_ns);
  f.ev.dur_ns = static_cast<int64_t>(dur);
  f.ev.self_ns = static_cast<int64_t>(dur - std::min(f.child_ticks, dur));
  f.ev.tid = t->tid;
  t->ops.Append(f.ev);
  if (d >= 2) t->stack[d - 2].child_ticks += dur;
}

class MemoryReporter final : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void* ptr, int64_t bytes, int64_t total_allocated, int64_t total_reserved,
                         c10::Device device) override {
    if (!g_observing.load(std::memory_order_relaxed)) return;
    ThreadLog* t = Log();
    if (t == nullptr) return;
    const uint32_t op = t->depth > 0 ? t->stack[t->depth - 1].ev.name : MemEvent::kNoOp;
    t->mem.Append({static_cast<int64_t>(base::Ticks()), g_step.load(std::memory_order_relaxed),
                   reinterpret_cast<uint64_t>(ptr), bytes, total_allocated, total_reserved,
                   static_cast<int16_t>(device.type()), static_cast<int16_t>(device.index()), op,
                   t->tid});
  }
  // True for as long as the observer is installed, so the CPU allocator keeps the size of every
  // block (and can report its free) even between the recorded steps.
  bool memoryProfilingEnabled() const override { return true; }
};

}  // namespace

struct OpObserver::State {
  at::CallbackHandle handle = 0;
  bool wanted = false;     // the schedule asks for observing
  bool suspended = false;  // Suspend(true)
  bool enabled = false;    // callback enabled
  bool reporter_pushed = false;
  std::mutex mu;
};

StatusOr<std::unique_ptr<OpObserver>> OpObserver::Install(const ObserverOptions& options) {
  Registry& r = GetRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.installed) {
      return FailedPrecondition(
          "the trainprof operator observer is already installed in this process (one "
          "TorchProfiler at a time); destroy the first one before attaching another");
    }
    if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != nullptr) {
      return FailedPrecondition(
          "LibTorch's own profiler (torch::autograd::profiler) is enabled on this thread; "
          "trainprof's operator observer cannot run beside it: disable it first");
    }
    r.installed = true;
    r.generation = g_generation.load() + 1;
    r.capacity = options.events_per_thread;
    r.logs.clear();
    r.strings = Strings{};
    g_generation.store(r.generation, std::memory_order_release);
  }
  g_observing.store(false);
  g_step.store(0);
  g_record_shapes = options.record_shapes;
  g_call_begin = options.on_call_begin;
  g_call_end = options.on_call_end;
  auto obs = std::unique_ptr<OpObserver>(new OpObserver());
  obs->state_ = std::make_unique<State>();
  try {
    obs->state_->handle = at::addGlobalCallback(at::RecordFunctionCallback(&OnOpStart, &OnOpEnd)
                                                    .needsInputs(options.record_shapes)
                                                    .needsIds(options.on_call_begin != nullptr));
    at::disableCallback(obs->state_->handle);
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                     std::make_shared<MemoryReporter>());
    obs->state_->reporter_pushed = true;
  } catch (const std::exception& e) {
    return InternalError(fmt::format("LibTorch refused the operator observer: {}", e.what()));
  }
  return obs;
}

OpObserver::~OpObserver() {
  g_observing.store(false);
  try {
    if (state_->handle != 0) at::removeCallback(state_->handle);
    if (state_->reporter_pushed) {
      c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    }
  } catch (const std::exception&) {
    // Destroyed on another thread than Install(): the reporter stays on that thread, silent
    // (g_observing is false). Nothing else can be done from here.
  }
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.installed = false;
}

void OpObserver::SetStep(int64_t step, bool observe) {
  std::lock_guard<std::mutex> lock(state_->mu);
  g_step.store(step, std::memory_order_relaxed);
  state_->wanted = observe;
  Apply();
}

void OpObserver::Suspend(bool suspended) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->suspended = suspended;
  Apply();
}

// With state_->mu held.
void OpObserver::Apply() {
  const bool on = state_->wanted && !state_->suspended;
  if (on == state_->enabled) return;
  state_->enabled = on;
  g_observing.store(on, std::memory_order_relaxed);
  if (on) {
    at::reenableCallback(state_->handle);
  } else {
    at::disableCallback(state_->handle);
  }
}

OpData OpObserver::Collect() {
  SetStep(g_step.load(), false);
  OpData out;
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  out.names.assign(r.strings.names.begin(), r.strings.names.end());
  out.shapes = r.strings.shapes;
  for (const auto& log : r.logs) {
    log->ops.CopyTo(out.ops);
    log->mem.CopyTo(out.mem);
    out.dropped_ops += log->ops.dropped();
    out.dropped_mem += log->mem.dropped();
    out.too_deep += log->too_deep.load(std::memory_order_relaxed);
  }
  std::ranges::stable_sort(out.ops, {}, &OpEvent::begin_ns);
  std::ranges::stable_sort(out.mem, {}, &MemEvent::t_ns);
  return out;
}

void ToSessionTime(OpData& data, const base::TickConverter& conv, int64_t t0_ns) {
  const double k = conv.ns_per_tick();
  auto span = [k](int64_t ticks) { return static_cast<int64_t>(static_cast<double>(ticks) * k); };
  for (OpEvent& e : data.ops) {
    e.begin_ns = conv.ToNs(static_cast<uint64_t>(e.begin_ns)) - t0_ns;
    e.dur_ns = span(e.dur_ns);
    e.self_ns = span(e.self_ns);
  }
  for (MemEvent& m : data.mem) m.t_ns = conv.ToNs(static_cast<uint64_t>(m.t_ns)) - t0_ns;
}

}  // namespace trainprof::torchlib
