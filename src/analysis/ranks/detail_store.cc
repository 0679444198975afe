#include "analysis/ranks/detail_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/bytes.h"

namespace trainprof::analysis {

namespace {

// A file in $TMPDIR (else /tmp) that is gone from its folder as soon as it is open: nothing is
// left behind however the process ends. -1 when none can be made.
int ScratchFile() {
  const char* dir = std::getenv("TMPDIR");
  std::string path =
      fmt::format("{}/trainprof-detail-XXXXXX", dir != nullptr && *dir ? dir : "/tmp");
  const int fd = mkstemp(path.data());
  if (fd >= 0) unlink(path.c_str());
  return fd;
}

// A record that cannot be read back is a failing disk, and a report without it would be wrong
// silently.
[[noreturn]] void Unreadable() {
  fmt::print(stderr, "trainprof: the scratch file of the ranks' detail cannot be read back\n");
  std::abort();
}

}  // namespace

std::shared_ptr<DetailStore> DetailStore::Open() {
  const int fd = ScratchFile();
  if (fd < 0) return nullptr;
  return std::shared_ptr<DetailStore>(new DetailStore(fd));
}

DetailStore::~DetailStore() { close(fd_); }

int64_t DetailStore::Append(std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (full_) return -1;
  // pwrite, not stdio: a full disk fails this call, not a later one, and reads and writes at
  // their own offsets need no shared file position (a fork() shares it).
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = pwrite(fd_, bytes.data() + done, bytes.size() - done,
                             static_cast<off_t>(end_ + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      full_ = true;  // the records before this one are whole; this one and the rest stay put
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  const int64_t at = end_;
  end_ += static_cast<int64_t>(bytes.size());
  return at;
}

void DetailStore::ReadBack(int64_t at, std::string& bytes) const {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = pread(fd_, bytes.data() + done, bytes.size() - done,
                            static_cast<off_t>(at + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  // Every byte was written by this process (Append returns only whole records).
  if (done < bytes.size()) Unreadable();
}

void DetailStore::Acquire(RankAnalysis& a) {
  std::unique_lock<std::mutex> lock(mu_);
  CheckNotCut(a);
  Hold& h = holds_[&a];  // stays: this hold keeps it from Release's erase
  if (h.count++ > 0) return back_.wait(lock, [&h] { return h.back; });
  lock.unlock();
  std::string bytes(static_cast<size_t>(a.spilled.bytes), '\0');
  ReadBack(a.spilled.at, bytes);
  if (!DecodeDetail(bytes, a)) Unreadable();
  lock.lock();
  h.back = true;
  back_.notify_all();
}

void DetailStore::ReadList(const RankAnalysis& a, AcrossList list, std::string& bytes) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    CheckNotCut(a);
  }
  const auto i = static_cast<size_t>(list);
  const int64_t begin = i == 0 ? 0 : a.spilled.list_ends[i - 1];
  bytes.resize(static_cast<size_t>(a.spilled.list_ends[i] - begin));
  ReadBack(a.spilled.at + begin, bytes);
}

void DetailStore::Release(RankAnalysis& a) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = holds_.find(&a);
  if (it == holds_.end() || --it->second.count > 0) return;
  const bool retire = it->second.retire;
  holds_.erase(it);
  RecycleDetail(a);
  if (retire) CutOut(a);
}

void DetailStore::RetireOnceWritten() {
  std::lock_guard<std::mutex> lock(mu_);
  retire_ = true;
}

void DetailStore::Retire(const RankAnalysis& a) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!retire_) return;
  auto it = holds_.find(&a);
  if (it != holds_.end() && it->second.count > 0) {
    it->second.retire = true;
    return;
  }
  CutOut(a);
}

void DetailStore::CutOut(const RankAnalysis& a) {
  if (!cut_.insert(&a).second) return;
  // Punched, not truncated: the records around it stay where they are. A file system without
  // holes keeps the bytes (the file is as large as before; nothing is lost).
  constexpr int64_t kPage = 4096;
  const int64_t first = (a.spilled.at + kPage - 1) / kPage * kPage;
  const int64_t end = (a.spilled.at + a.spilled.bytes) / kPage * kPage;
  if (end > first)
    (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, first, end - first);
}

void DetailStore::CheckNotCut(const RankAnalysis& a) const {
  if (!cut_.contains(&a)) return;
  fmt::print(stderr,
             "trainprof: internal error: a rank's detail was read after its CSV rows were "
             "written and its scratch record let go\n");
  std::abort();
}

void DetailStore::Forget(const RankAnalysis& a) {
  std::lock_guard<std::mutex> lock(mu_);
  holds_.erase(&a);
}

namespace {

// The lengths the readers across ranks ask of a spilled analysis (SpilledDetail's counts).
void CountDetail(const RankAnalysis& a, SpilledDetail& s) {
  s.shape_rows = static_cast<int64_t>(a.lists->operators_by_shape.size());
  s.stack_rows = static_cast<int64_t>(a.lists->operators_by_stack.size());
  s.module_rows = static_cast<int64_t>(a.lists->modules.size());
  s.flops_rows = static_cast<int64_t>(a.lists->flops_operators.size());
  s.module_root_ns = ModuleRootNs(a);
}

// `a`'s detail, counted in `counts`, is now record `at` of `store` (`bytes` long).
void Spilled(const std::shared_ptr<DetailStore>& store, int64_t at, size_t bytes,
             SpilledDetail counts, RankAnalysis& a) {
  a.spilled = std::move(counts);
  a.spilled.at = at;
  a.spilled.bytes = static_cast<int64_t>(bytes);
  a.spilled.store = store;
  FreeDetail(a);
}

}  // namespace

void Spill(const std::shared_ptr<DetailStore>& store, RankAnalysis& a) {
  if (store == nullptr || a.spilled.store != nullptr) return;
  SpilledDetail counts;
  const std::string bytes = EncodeDetail(a, &counts.list_ends);
  const int64_t at = store->Append(bytes);
  if (at < 0) return;  // kept in place
  CountDetail(a, counts);
  Spilled(store, at, bytes.size(), std::move(counts), a);
}

std::string TakeDetail(RankAnalysis& a) {
  DetailHold hold(a);
  SpilledDetail c;
  CountDetail(a, c);
  std::string out;
  base::PutU64(out, a.memory.devices.size());  // their counts are in the summary
  const std::string detail = EncodeDetail(a, &c.list_ends);
  for (int64_t v : {c.shape_rows, c.stack_rows, c.module_rows, c.flops_rows, c.module_root_ns})
    base::PutU64(out, static_cast<uint64_t>(v));
  for (int64_t end : c.list_ends) base::PutU64(out, static_cast<uint64_t>(end));
  out += detail;
  if (a.spilled.store == nullptr) FreeDetail(a);  // a held one is let go by the hold
  return out;
}

bool GiveDetail(std::string_view bytes, const std::shared_ptr<DetailStore>& store,
                RankAnalysis& a) {
  base::ByteReader r{bytes};
  SpilledDetail c;
  const uint64_t devices = r.U64();
  for (int64_t* v :
       {&c.shape_rows, &c.stack_rows, &c.module_rows, &c.flops_rows, &c.module_root_ns})
    *v = static_cast<int64_t>(r.U64());
  int64_t begin = 0;
  for (int64_t& end : c.list_ends) {
    end = static_cast<int64_t>(r.U64());
    if (end < begin) return false;
    begin = end;
  }
  if (!r.ok || devices != a.memory.devices.size() || static_cast<uint64_t>(begin) > r.in.size())
    return false;
  const int64_t at = store != nullptr ? store->Append(r.in) : -1;
  if (at < 0) return DecodeDetail(r.in, a);  // no store, or it takes no more: kept in place
  Spilled(store, at, r.in.size(), std::move(c), a);
  return true;
}

void Unspill(RankAnalysis& a) {
  if (a.spilled.store == nullptr) return;
  HoldDetail(a);
  a.spilled.store->Forget(a);
  a.spilled = SpilledDetail{};
}

void HoldDetail(const RankAnalysis& a) {
  if (a.spilled.store != nullptr) a.spilled.store->Acquire(const_cast<RankAnalysis&>(a));
}

void LetDetailGo(const RankAnalysis& a) {
  if (a.spilled.store != nullptr) a.spilled.store->Release(const_cast<RankAnalysis&>(a));
}

void RetireDetail(const RankAnalysis& a) {
  if (a.spilled.store != nullptr) a.spilled.store->Retire(a);
}

void RetireDetailOnceWritten(const std::vector<RankAnalysis>& analyses) {
  for (const RankAnalysis& a : analyses)
    if (a.spilled.store != nullptr) a.spilled.store->RetireOnceWritten();
}

int64_t ShapeRows(const RankAnalysis& a) {
  return a.spilled.store == nullptr ? static_cast<int64_t>(a.lists->operators_by_shape.size())
                                    : a.spilled.shape_rows;
}

int64_t StackRows(const RankAnalysis& a) {
  return a.spilled.store == nullptr ? static_cast<int64_t>(a.lists->operators_by_stack.size())
                                    : a.spilled.stack_rows;
}

namespace {

// List `list` of `a` (spilled) read back alone into `scratch`.
template <class List>
const List& ReadListBack(const RankAnalysis& a, AcrossList list, List& scratch) {
  thread_local std::string bytes;
  a.spilled.store->ReadList(a, list, bytes);
  if (!DecodeList(bytes, scratch)) Unreadable();
  return scratch;
}

// `kept` (a list of `a`) when `a` is not spilled, else the list read back alone into `scratch`.
template <class Row>
const std::vector<Row>& ListOf(const RankAnalysis& a, AcrossList list, const std::vector<Row>& kept,
                               std::vector<Row>& scratch) {
  return a.spilled.store == nullptr ? kept : ReadListBack(a, list, scratch);
}

}  // namespace

const std::vector<ModuleRow>& ModulesOf(const RankAnalysis& a, std::vector<ModuleRow>& scratch) {
  return ListOf(a, AcrossList::kModules, a.lists->modules, scratch);
}

const std::vector<OperatorRow>& OperatorsOf(const RankAnalysis& a,
                                            std::vector<OperatorRow>& scratch) {
  return ListOf(a, AcrossList::kOperators, a.lists->operators, scratch);
}

const std::vector<KernelRow>& KernelsOf(const RankAnalysis& a, std::vector<KernelRow>& scratch) {
  return ListOf(a, AcrossList::kKernels, a.lists->kernels, scratch);
}

const std::vector<ShapeRow>& ShapesOf(const RankAnalysis& a, std::vector<ShapeRow>& scratch) {
  return ListOf(a, AcrossList::kShapes, a.lists->flops_shapes, scratch);
}

const std::vector<Candidate>& CandidatesOf(const RankAnalysis& a, std::vector<Candidate>& scratch) {
  return ListOf(a, AcrossList::kCandidates, a.lists->candidates, scratch);
}

const RankTables& TablesOf(const RankAnalysis& a, RankTables& scratch) {
  if (a.tables) return *a.tables;  // not spilled, or held
  return ReadListBack(a, AcrossList::kTables, scratch);
}

int64_t ModuleRootNs(const RankAnalysis& a) {
  if (a.spilled.store != nullptr) return a.spilled.module_root_ns;
  int64_t ns = 0;
  for (const ModuleRow& m : a.lists->modules) ns += m.depth == 0 ? m.device_ns : 0;
  return ns;
}

int64_t ModuleRows(const RankAnalysis& a) {
  return a.spilled.store == nullptr ? static_cast<int64_t>(a.lists->modules.size())
                                    : a.spilled.module_rows;
}

int64_t FlopsRows(const RankAnalysis& a) {
  return a.spilled.store == nullptr ? static_cast<int64_t>(a.lists->flops_operators.size())
                                    : a.spilled.flops_rows;
}

}  // namespace trainprof::analysis
