#include "record/recorder.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/published_log.h"
#include "base/thread_id.h"

namespace trainprof {
namespace internal {
std::atomic<bool> g_recording{false};
thread_local ThreadState t_state __attribute__((tls_model("initial-exec"))) = {nullptr, 0, 0};
}  // namespace internal

namespace record {
namespace {

constexpr size_t kChunkEvents = 16384;  // 512 KiB per chunk

// The events of one thread in one epoch: only the owner appends (base::PublishedLog), a
// Session copies the published prefix at any time.
class ThreadBuffer {
 public:
  ThreadBuffer(int64_t tid, std::string thread_name)
      : name(std::move(thread_name)), tid_(tid), log_(1) {}

  // Owner thread only, with the registry lock held (no reader of this buffer is running).
  void Reset(uint32_t epoch, int64_t capacity) {
    epoch_ = epoch;
    log_.Reset(capacity);
  }

  void Append(const Event& e) noexcept { log_.Append(e); }

  void CopyTo(ThreadEvents& out) const {
    log_.CopyTo(out.events);
    out.dropped = log_.dropped();
  }

  template <typename F>
  size_t ForEachFrom(size_t from, F&& f) const {
    return log_.ForEachFrom(from, std::forward<F>(f));
  }
  uint32_t epoch() const { return epoch_; }
  int64_t tid() const { return tid_; }
  std::string name;       // guarded by the registry lock
  bool orphaned = false;  // the owner thread has exited; guarded by the registry lock

 private:
  int64_t tid_;
  uint32_t epoch_ = 0;
  base::PublishedLog<Event, kChunkEvents> log_;
};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  uint32_t active_epoch = 0;  // 0: none
  uint32_t last_epoch = 0;
  int64_t capacity = 0;
  std::unordered_map<std::string, std::unique_ptr<SourceLocation>> interned;
  std::vector<std::unique_ptr<std::string>> interned_names;
};

Registry& GetRegistry() {
  static Registry* r = new Registry();  // never destroyed: threads may record during exit
  return *r;
}

std::atomic<uint32_t> g_epoch{0};

// The name a thread shows in trace.json when SetThreadName() gave it none. The kernel keeps 15
// characters of a name and names a program started as /proc/self/exe "exe", so the main thread
// is named from the program's own path ("trainprof-profile", not "trainprof-profi").
std::string PthreadName() {
  if (base::ThisThreadId() == static_cast<int64_t>(getpid())) {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
      const std::string path(exe, static_cast<size_t>(n));
      return path.substr(path.find_last_of('/') + 1);
    }
  }
  char buf[32] = {0};
  pthread_getname_np(pthread_self(), buf, sizeof(buf));
  return buf;
}

// Marks the thread's buffer orphaned when the thread exits.
struct BufferOwner {
  ThreadBuffer* buffer = nullptr;
  ~BufferOwner() {
    if (buffer == nullptr) return;
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    buffer->orphaned = true;
    internal::t_state.buffer = nullptr;
  }
};
thread_local BufferOwner t_owner;
thread_local std::string t_thread_name;  // set by SetThreadName()

// Slow path: give the calling thread a buffer of the current epoch. Returns null when no
// epoch is active.
ThreadBuffer* Attach(uint32_t epoch) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.active_epoch == 0 || r.active_epoch != epoch) return nullptr;
  auto* buf = static_cast<ThreadBuffer*>(internal::t_state.buffer);
  if (buf == nullptr) {
    r.buffers.push_back(std::make_unique<ThreadBuffer>(
        base::ThisThreadId(), t_thread_name.empty() ? PthreadName() : t_thread_name));
    buf = r.buffers.back().get();
    t_owner.buffer = buf;
    internal::t_state.buffer = buf;
  }
  buf->Reset(epoch, r.capacity);
  internal::t_state.epoch = epoch;
  return buf;
}

}  // namespace

StatusOr<uint32_t> BeginEpoch(int64_t events_per_thread) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.active_epoch != 0) {
    return FailedPrecondition(
        "another trainprof Session is active in this process; Finish() it first");
  }
  // Buffers of threads that have exited and whose data was collected can go now.
  std::erase_if(r.buffers, [](const std::unique_ptr<ThreadBuffer>& b) { return b->orphaned; });
  r.capacity = std::max<int64_t>(1, events_per_thread);
  r.active_epoch = ++r.last_epoch;
  g_epoch.store(r.active_epoch, std::memory_order_release);
  return r.active_epoch;
}

void SetRecording(bool on) { internal::g_recording.store(on, std::memory_order_relaxed); }

std::vector<ThreadEvents> Collect(uint32_t epoch) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<ThreadEvents> out;
  for (const auto& b : r.buffers) {
    if (b->epoch() != epoch) continue;
    ThreadEvents te;
    te.tid = b->tid();
    te.name = b->name;
    b->CopyTo(te);
    if (te.events.empty() && te.dropped == 0) continue;
    out.push_back(std::move(te));
  }
  return out;
}

void ScanNew(uint32_t epoch, ScanCursor& cursor,
             const std::function<void(int64_t tid, const Event&)>& f) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& b : r.buffers) {
    if (b->epoch() != epoch) continue;
    auto it = std::find_if(cursor.next.begin(), cursor.next.end(),
                           [&](const auto& c) { return c.first == b.get(); });
    if (it == cursor.next.end()) it = cursor.next.insert(cursor.next.end(), {b.get(), 0});
    const int64_t tid = b->tid();
    it->second = b->ForEachFrom(it->second, [&](const Event& e) { f(tid, e); });
  }
}

void EndEpoch(uint32_t epoch) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.active_epoch == epoch) {
    r.active_epoch = 0;
    g_epoch.store(0, std::memory_order_release);
    internal::g_recording.store(false, std::memory_order_relaxed);
  }
}

}  // namespace record

namespace internal {

void RecordEvent(const SourceLocation* loc, uint64_t begin, uint64_t end, uint32_t depth,
                 uint32_t cuda_slot) noexcept {
  ThreadState& s = t_state;
  const uint32_t epoch = record::g_epoch.load(std::memory_order_relaxed);
  if (__builtin_expect(s.epoch != epoch || s.buffer == nullptr, 0)) {
    if (epoch == 0 || record::Attach(epoch) == nullptr) return;
  }
  static_cast<record::ThreadBuffer*>(s.buffer)->Append(
      record::Event{begin, end, loc, depth, cuda_slot});
}

}  // namespace internal

const char* ActionKindName(ActionKind kind) {
  switch (kind) {
    case ActionKind::kOther:
      return "other";
    case ActionKind::kLoop:
      return "loop";
    case ActionKind::kDataLoader:
      return "dataloader";
    case ActionKind::kForward:
      return "forward";
    case ActionKind::kBackward:
      return "backward";
    case ActionKind::kOptimizer:
      return "optimizer";
    case ActionKind::kCommunication:
      return "communication";
    case ActionKind::kStep:
      return "step";
  }
  return "other";
}

void SetThreadName(std::string_view name) {
  record::Registry& r = record::GetRegistry();
  auto* buf = static_cast<record::ThreadBuffer*>(internal::t_state.buffer);
  std::string n(name);
  pthread_setname_np(pthread_self(), n.substr(0, 15).c_str());
  record::t_thread_name = n;
  std::lock_guard<std::mutex> lock(r.mu);
  if (buf != nullptr) buf->name = n;
}

const SourceLocation* InternAction(std::string_view name, ActionKind kind) {
  record::Registry& r = record::GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string key = std::string(name) + '\x1f' + static_cast<char>('0' + static_cast<int>(kind));
  auto it = r.interned.find(key);
  if (it != r.interned.end()) return it->second.get();
  r.interned_names.push_back(std::make_unique<std::string>(name));
  auto loc = std::make_unique<SourceLocation>(
      SourceLocation{r.interned_names.back()->c_str(), "", 0, kind});
  const SourceLocation* p = loc.get();
  r.interned.emplace(std::move(key), std::move(loc));
  return p;
}

}  // namespace trainprof
