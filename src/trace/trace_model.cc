#include "trace/trace_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>

#include "base/diagnostics.h"
#include "base/radix_sort.h"

namespace trainprof::trace {

const char* EventKindName(EventKind k) {
  switch (k) {
    case EventKind::kCpuOp:
      return "cpu_op";
    case EventKind::kUserAnnotation:
      return "user_annotation";
    case EventKind::kGpuUserAnnotation:
      return "gpu_user_annotation";
    case EventKind::kPythonFunction:
      return "python_function";
    case EventKind::kRuntime:
      return "cuda_runtime";
    case EventKind::kDriver:
      return "cuda_driver";
    case EventKind::kKernel:
      return "kernel";
    case EventKind::kMemcpy:
      return "gpu_memcpy";
    case EventKind::kMemset:
      return "gpu_memset";
    case EventKind::kSpan:
      return "Trace";
    case EventKind::kOther:
      return "other";
  }
  return "other";
}

namespace {

// An open-addressing table of ids (id + 1 a slot, 0 for empty) made twice as big, at least
// `least` slots, each id placed again by `hash_of(id)`: NameTable's and InputSets' growth.
template <class HashOf>
void GrowSlots(std::vector<uint32_t>& slots, size_t least, HashOf hash_of) {
  std::vector<uint32_t> old =
      std::exchange(slots, std::vector<uint32_t>(std::max(least, slots.size() * 2)));
  const size_t mask = slots.size() - 1;
  for (uint32_t id : old) {
    if (id == 0) continue;
    size_t i = hash_of(id - 1) & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = id;
  }
}

}  // namespace

size_t NameTable::SlotOf(std::string_view s, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const uint32_t id = slots_[i];
    if (id == 0 || (hashes_[id - 1] == h && names_[id - 1] == s)) return i;
  }
}

void NameTable::Grow() {
  GrowSlots(slots_, 1024, [&](uint32_t id) { return hashes_[id]; });
}

// Eight bytes a step, then a final mix so that the low bits (the slot) depend on every byte:
// names are interned for every event, and std::hash's byte-wise Murmur cost 2 % of parsing.
uint64_t NameTable::Hash(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  uint64_t h = s.size() * kMul;
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * kMul;
  }
  h ^= h >> 33;  // MurmurHash3's 64-bit finaliser
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ULL;
  return h ^ (h >> 33);
}

uint32_t InputSets::Intern(const OpInputs& in) {
  if (2 * (sets_.size() + 1) > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = Hash(in) & mask;
  for (; slots_[i] != 0; i = (i + 1) & mask)
    if (sets_[slots_[i] - 1] == in) return slots_[i] - 1;
  sets_.push_back(in);
  slots_[i] = static_cast<uint32_t>(sets_.size());
  return slots_[i] - 1;
}

void InputSets::Grow() {
  GrowSlots(slots_, 64, [&](uint32_t id) { return Hash(sets_[id]); });
}

uint64_t InputSets::Hash(const OpInputs& in) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  uint64_t h = (uint64_t{in.dims} << 32 | in.types) * kMul;
  h = (h ^ (uint64_t{in.stack} << 32 | in.concrete)) * kMul;
  return h ^ (h >> 32);
}

uint32_t NameTable::Intern(std::string_view s) {
  if (2 * (names_.size() + 1) > slots_.size()) Grow();
  const uint64_t h = Hash(s);
  const size_t slot = SlotOf(s, h);
  if (slots_[slot] != 0) return slots_[slot] - 1;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  hashes_.push_back(h);
  slots_[slot] = id + 1;
  return id;
}

uint32_t NameTable::Find(std::string_view s) const {
  if (slots_.empty()) return std::numeric_limits<uint32_t>::max();
  const uint32_t id = slots_[SlotOf(s, Hash(s))];
  return id == 0 ? std::numeric_limits<uint32_t>::max() : id - 1;
}

void Int64Column::SetWide(size_t i, int64_t v) {
  if (Narrow(v)) {
    if (narrow_[i] == kWide) wide_.erase(i);
    narrow_[i] = static_cast<int32_t>(v);
  } else {
    narrow_[i] = kWide;
    wide_[i] = v;
  }
}

void Int64Column::Absorb(Int64Column&& o) {
  const size_t at = narrow_.size();
  narrow_.insert(narrow_.end(), o.narrow_.begin(), o.narrow_.end());
  for (const auto& [i, v] : o.wide_) wide_[at + i] = v;
  o = Int64Column{};
}

void TimeColumn::PushWhole(int64_t v) {
  const size_t first = offset_.size() & ~kBlockMask;
  if (offset_[first] != kWide) {  // the block becomes one kept whole
    const int64_t base = base_.back();
    base_.back() = static_cast<int64_t>(whole_.size());
    for (size_t k = first; k < offset_.size(); ++k) {
      whole_.push_back(base + offset_[k]);
      offset_[k] = kWide;
    }
  }
  whole_.push_back(v);
  offset_.push_back(kWide);
}

void TimeColumn::Shift(int64_t d) {
  for (size_t b = 0; b < base_.size(); ++b)
    if (offset_[b << kBlockBits] != kWide) base_[b] += d;
  for (int64_t& t : whole_) t += d;
}

void TimeColumn::Absorb(TimeColumn&& o) {
  for (size_t i = 0; i < o.size(); ++i) push_back(o[i]);
  o = TimeColumn{};
}

namespace {

// Moves `from` onto the end of `to` and frees `from`. Room for both when ReserveFor made it;
// else the buffer at least doubles, so taking in many parts one after another (a gzip file's)
// copies each event a few times, not once per part.
template <class T>
void AppendColumn(std::vector<T>& to, std::vector<T>&& from) {
  to.insert(to.end(), from.begin(), from.end());
  std::vector<T>().swap(from);
}

}  // namespace

void TraceModel::Absorb(TraceModel&& o, const std::vector<uint32_t>& names,
                        const std::vector<uint32_t>& tracks) {
  const size_t at = size();
  for (uint32_t& n : o.name) n = names[n];
  for (uint32_t& t : o.track) t = tracks[t];
  for (KernelStats& k : o.kernel_stats) k.event += static_cast<uint32_t>(at);
  for (CollectiveArgs& c : o.collective_args) {
    c.event += static_cast<uint32_t>(at);
    for (uint32_t* id : {&c.collective, &c.process_group, &c.comms_id, &c.dtype})
      if (*id != kNoName) *id = names[*id];
  }
  ts_ns.Absorb(std::move(o.ts_ns));
  dur_ns.Absorb(std::move(o.dur_ns));
  AppendColumn(name, std::move(o.name));
  AppendColumn(kind, std::move(o.kind));
  AppendColumn(track, std::move(o.track));
  correlation.Absorb(std::move(o.correlation));
  external_id.Absorb(std::move(o.external_id));
  std::vector<uint32_t> sets(o.input_sets.size());  // o's set ids to this model's
  for (size_t k = 0; k < sets.size(); ++k) {
    OpInputs in = o.input_sets[static_cast<uint32_t>(k)];
    for (uint32_t* id : {&in.dims, &in.types, &in.stack, &in.concrete})
      if (*id != kNoName) *id = names[*id];
    sets[k] = input_sets.Intern(in);
  }
  for (auto& [e, set] : o.op_inputs) e += static_cast<uint32_t>(at), set = sets[set];
  for (auto& b : o.memcpy_bytes) b.first += static_cast<uint32_t>(at);
  for (auto& b : o.memory_bw) b.first += static_cast<uint32_t>(at);
  for (RangeCounter& c : o.range_counters)
    c.event += static_cast<uint32_t>(at), c.name = names[c.name];
  for (auto& b : o.host_streams) b.first += static_cast<uint32_t>(at);
  for (auto& [e, n] : o.launch_kernels) e += static_cast<uint32_t>(at), n = names[n];
  for (auto& [k, l] : o.captured_launcher)
    k += static_cast<uint32_t>(at), l += static_cast<uint32_t>(at);
  for (auto& [r, c] : o.captured_in) r += static_cast<uint32_t>(at), c += static_cast<uint32_t>(at);
  for (MemoryEvent& e : o.memory_events) e.track = tracks[e.track];
  AppendColumn(op_inputs, std::move(o.op_inputs));
  AppendColumn(memcpy_bytes, std::move(o.memcpy_bytes));
  AppendColumn(memory_bw, std::move(o.memory_bw));
  AppendColumn(range_counters, std::move(o.range_counters));
  AppendColumn(host_streams, std::move(o.host_streams));
  AppendColumn(launch_kernels, std::move(o.launch_kernels));
  AppendColumn(captured_launcher, std::move(o.captured_launcher));
  AppendColumn(captured_in, std::move(o.captured_in));
  AppendColumn(memory_events, std::move(o.memory_events));
  AppendColumn(kernel_stats, std::move(o.kernel_stats));
  AppendColumn(collective_args, std::move(o.collective_args));
  for (SyncWait& w : o.sync_waits) w.event += static_cast<uint32_t>(at);
  AppendColumn(sync_waits, std::move(o.sync_waits));
  for (const auto& [dev, bytes] : o.peak_allocated_bytes) {
    auto it = std::find_if(peak_allocated_bytes.begin(), peak_allocated_bytes.end(),
                           [dev = dev](const auto& p) { return p.first == dev; });
    if (it == peak_allocated_bytes.end())
      peak_allocated_bytes.emplace_back(dev, bytes);
    else
      it->second = std::max(it->second, bytes);
  }
}

void TraceModel::ReserveFor(const std::vector<const TraceModel*>& parts) {
  auto room = [&](auto column) {
    size_t n = (this->*column).size();
    for (const TraceModel* p : parts) n += (p->*column).size();
    (this->*column).reserve(n);
  };
  room(&TraceModel::ts_ns), room(&TraceModel::dur_ns), room(&TraceModel::name);
  room(&TraceModel::kind), room(&TraceModel::track), room(&TraceModel::correlation);
  room(&TraceModel::external_id), room(&TraceModel::op_inputs), room(&TraceModel::memcpy_bytes);
  room(&TraceModel::host_streams);
  room(&TraceModel::memory_events), room(&TraceModel::kernel_stats);
  room(&TraceModel::collective_args), room(&TraceModel::sync_waits);
}

void TraceModel::ReserveEvents(size_t n) {
  ts_ns.reserve(n), dur_ns.reserve(n), name.reserve(n), kind.reserve(n), track.reserve(n);
  correlation.reserve(n), external_id.reserve(n);
}

KernelStats TraceModel::StatsOf(size_t i) const {
  auto it = std::lower_bound(kernel_stats.begin(), kernel_stats.end(), i,
                             [](const KernelStats& k, size_t e) { return k.event < e; });
  return it != kernel_stats.end() && it->event == i ? *it : KernelStats{};
}

const CollectiveArgs* TraceModel::CollectiveOf(size_t i) const {
  auto it = std::lower_bound(collective_args.begin(), collective_args.end(), i,
                             [](const CollectiveArgs& c, size_t e) { return c.event < e; });
  return it != collective_args.end() && it->event == i ? &*it : nullptr;
}

const SyncWait* TraceModel::SyncWaitOf(size_t i) const {
  auto it = std::lower_bound(sync_waits.begin(), sync_waits.end(), i,
                             [](const SyncWait& w, size_t e) { return w.event < e; });
  return it != sync_waits.end() && it->event == i ? &*it : nullptr;
}

const OpInputs* TraceModel::InputsOf(size_t i) const {
  const uint32_t set = InputSetOf(i);
  return set == kNoName ? nullptr : &input_sets[set];
}

namespace {
// The value of event i in a sparse (event, value) column sorted by event, else `none`.
template <class V>
V SparseAt(const std::vector<std::pair<uint32_t, V>>& col, size_t i, V none) {
  auto it = std::lower_bound(col.begin(), col.end(), i,
                             [](const auto& c, size_t e) { return c.first < e; });
  return it != col.end() && it->first == i ? it->second : none;
}
}  // namespace

uint32_t TraceModel::InputSetOf(size_t i) const { return SparseAt(op_inputs, i, kNoName); }

int64_t TraceModel::MemcpyBytesOf(size_t i) const { return SparseAt(memcpy_bytes, i, kNone); }
double TraceModel::MemoryBwOf(size_t i) const {
  return SparseAt(memory_bw, i, std::numeric_limits<double>::quiet_NaN());
}

int64_t TraceModel::HostStreamOf(size_t i) const { return SparseAt(host_streams, i, int64_t{-1}); }

uint32_t TraceModel::LaunchKernelOf(size_t i) const { return SparseAt(launch_kernels, i, kNoName); }

int32_t TraceModel::OwnLauncherOf(size_t i) const {
  constexpr uint32_t kNotCaptured = UINT32_MAX;
  const uint32_t captured = SparseAt(captured_launcher, i, kNotCaptured);
  if (captured != kNotCaptured) return static_cast<int32_t>(captured);
  return launcher.empty() ? -1 : launcher[i];
}

int32_t TraceModel::CapturedInOf(size_t i) const {
  constexpr uint32_t kNotCopied = UINT32_MAX;
  const uint32_t call = SparseAt(captured_in, i, kNotCopied);
  return call == kNotCopied ? -1 : static_cast<int32_t>(call);
}

uint32_t TraceModel::FindOrAddTrack(const Track& t) {
  auto it = std::find(tracks.begin(), tracks.end(), t);
  if (it != tracks.end()) return static_cast<uint32_t>(it - tracks.begin());
  tracks.push_back(t);
  return static_cast<uint32_t>(tracks.size() - 1);
}

Track TraceModel::MapTrackNames(Track t, const std::vector<uint32_t>& names) {
  auto id = [&](int64_t v) {  // string pids and tids are name ids
    return v >= kStringIdBase ? kStringIdBase + names[static_cast<size_t>(v - kStringIdBase)] : v;
  };
  t.pid = id(t.pid), t.tid = id(t.tid);
  return t;
}

const DeviceInfo* TraceModel::FindDevice(int64_t id) const {
  for (const DeviceInfo& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

size_t TraceModel::Add(EventKind k, std::string_view event_name, int64_t ts, int64_t dur,
                       uint32_t where) {
  ts_ns.push_back(ts);
  dur_ns.push_back(dur);
  name.push_back(names.Intern(event_name));
  kind.push_back(k);
  track.push_back(where);
  correlation.push_back(kNone);
  external_id.push_back(kNone);
  return ts_ns.size() - 1;
}

// A sorted array rather than a hash map: 12 bytes a runtime call instead of about 40.
void TraceModel::LinkLaunches() {
  launcher.assign(size(), -1);
  struct Call {
    int64_t corr;
    int32_t event;
  };
  const auto is_call = [](EventKind k) {
    return k == EventKind::kRuntime || k == EventKind::kDriver;
  };
  std::vector<Call> calls;  // room made once: doubling faulted and copied them twice over
  calls.reserve(static_cast<size_t>(std::ranges::count_if(kind, is_call)));
  for (size_t i = 0; i < size(); ++i)
    if (is_call(kind[i]) && correlation[i] != kNone)
      calls.push_back({correlation[i], static_cast<int32_t>(i)});
  // Of calls sharing an id, the first in the file launched the work: a stable sort keeps them
  // in event order.
  base::RadixSortBy(calls, [](const Call& c) { return c.corr; });
  // The GPU work's ids come nearly in order through the file, so each search starts where the
  // last ended (a binary search each was 30 ms of reading a 1 GB trace, one cache miss a step).
  const auto below = [](const Call& a, int64_t v) { return a.corr < v; };
  size_t at = 0;
  for (size_t i = 0; i < size(); ++i) {
    if (!IsGpuKind(kind[i]) || correlation[i] == kNone) continue;
    const int64_t c = correlation[i];
    at = base::GallopLowerBound(calls, at, c, below);
    if (at != calls.size() && calls[at].corr == c) launcher[i] = calls[at].event;
  }
}

void TraceModel::AddDiagnostic(base::DiagnosticName name, int64_t count, std::string message) {
  diagnostics.push_back({name, count, std::move(message)});
}

}  // namespace trainprof::trace
