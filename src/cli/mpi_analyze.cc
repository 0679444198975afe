// `trainprof analyze --mpi PATH` under mpirun: MPI process k reads and summarises its share of
// each run's rank files where they lie: every process lists PATH, and when the listings differ
// (traces on node-local disks) process 0 merges them and gives each file to a process that sees
// it (trace/file_shares.h); within that, its own ranks' files when the names say which rank each
// is. Only the summaries (the .tpsum bytes) travel to process 0, a few MB at a time, and it
// writes the report, identical to a run without MPI whatever N. Built only when CMake finds MPI
// (TRAINPROF_HAVE_MPI); otherwise --mpi is an error that says so.
#include <fmt/format.h>

#include "analysis/rank_summary.h"
#include "analysis/ranks/detail_store.h"
#include "analysis/sections/sections.h"
#include "base/bytes.h"
#include "cli/analyze_run.h"
#include "trace/file_shares.h"

#ifdef TRAINPROF_HAVE_MPI
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#endif

namespace trainprof::cli {

#ifndef TRAINPROF_HAVE_MPI
int RunAnalyzeMpi(const AnalyzeFlags&, const StatusOr<trace::TraceListing>&) {
  fmt::print(stderr,
             "trainprof: --mpi: this trainprof was built without MPI (install libopenmpi-dev "
             "and build again; CMake finds it with find_package(MPI))\n");
  return kExitBadInput;
}
#else
namespace {

// Every MPI call of this process, whichever thread makes it (MPI_THREAD_SERIALIZED): the
// reading threads ask for files (FileQueue) and send or take results (Spill) between files.
std::mutex& MpiLock() {
  static std::mutex mu;
  return mu;
}

// Asks `ready` every millisecond until it says yes: Open MPI's blocking calls spin on a core,
// which a process still reading its share, or process 0 writing the report, could use.
void PollGently(const std::function<bool()>& ready) {
  while (!ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void WaitGently(MPI_Request& r) {
  PollGently([&] {
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

constexpr int kResultsTag = 17;
constexpr int kGoTag = 18;  // process 0 to another: it is ready for that one's results

// One process's results for a run, in messages of about kChunkBytes: per file it read, its
// index in the run, then kSplit and the summary's bytes (its detail and the rest apart), or
// kError and the error message. A process other than 0 makes each result's record as soon as
// the result is made (Add, on the reading threads, one at a time) and lets the result go, so it
// holds a few summaries, not its share. With `stream` (files handed out as the processes go:
// process 0 takes results between its own files) each StreamBytes() of records is sent at
// once, so process 0 decodes them while both read instead of after, when the others only wait;
// up to kInFlight sends wait for process 0, and records beyond them go to a scratch file, sent
// at the end as every record is without `stream`.
// Without a scratch file (std::tmpfile failed: no writable /tmp) the records wait in memory.
constexpr size_t kChunkBytes = size_t{4} << 20;
constexpr size_t kInFlight = 4;

// 1 MiB, or TRAINPROF_MPI_STREAM_BYTES (for tests: a few small ranks stream only with a few
// bytes a message).
size_t StreamBytes() {
  const char* env = std::getenv("TRAINPROF_MPI_STREAM_BYTES");
  const unsigned long long n = env != nullptr ? std::strtoull(env, nullptr, 10) : 0;
  return n > 0 ? static_cast<size_t>(n) : size_t{1} << 20;
}
constexpr uint64_t kError = 0, kSplit = 2;

class Spill {
 public:
  explicit Spill(bool stream) : file_(std::tmpfile()), stream_(stream ? StreamBytes() : 0) {}
  ~Spill() { Close(); }
  Spill(const Spill&) = delete;
  Spill& operator=(const Spill&) = delete;

  void Add(uint64_t index, StatusOr<analysis::RankSummary> result) {
    std::string record;
    base::PutU64(record, index);
    base::PutU64(record, result.ok() ? kSplit : kError);
    if (result.ok()) {
      std::string body;  // the detail apart, which process 0 stores as it comes
      base::PutText(body, analysis::TakeDetail(result->analysis));
      base::PutText(body, analysis::EncodeSummary(*result));
      base::PutText(record, body);
    } else {
      base::PutText(record, result.status().message());
    }
    if (stream_ == 0) return Store(record);
    pending_ += record;
    if (pending_.size() >= stream_) Stream();
  }

  // Once process 0 takes the rest: every send made, the records not sent go to the scratch file
  // (Next reads them back).
  void EndStream() {
    for (Flight& f : flights_) WaitGently(f.request);
    flights_.clear();
    Store(pending_);
    pending_.clear();
  }

  // The next message of about kChunkBytes (whole records), read back from the scratch file one
  // message at a time, then those kept in memory; false when none is left.
  bool Next(std::string* out) {
    out->clear();
    std::string head(3 * sizeof(uint64_t), '\0');
    if (file_ != nullptr && !reading_ && std::fseek(file_, 0, SEEK_SET) != 0) Close();
    reading_ = true;
    while (file_ != nullptr && out->size() < kChunkBytes &&
           std::fread(head.data(), 1, head.size(), file_) == head.size()) {
      base::ByteReader r{head};
      r.U64(), r.U64();
      const size_t body = r.U64(), at = out->size() + head.size();
      out->append(head).resize(at + body);
      if (std::fread(out->data() + at, 1, body, file_) != body) {
        out->resize(at - head.size());  // cut short: the rest is said missing at process 0
        Close();
      }
    }
    if (out->empty() && !kept_.empty()) {
      *out = std::move(kept_.back());
      kept_.pop_back();
    }
    return !out->empty();
  }

 private:
  void Close() {
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
  }
  // After a failed write (a full disk) the file takes no more: its last record may be cut,
  // which Next stops at, and these records and the rest wait in memory.
  void Store(const std::string& records) {
    if (records.empty()) return;
    if (file_ == nullptr || full_ ||
        std::fwrite(records.data(), 1, records.size(), file_) != records.size()) {
      full_ = file_ != nullptr;
      Keep(records);
    }
  }
  void Keep(const std::string& record) {
    if (kept_.empty() || kept_.back().size() + record.size() > kChunkBytes) kept_.emplace_back();
    kept_.back() += record;
  }

  // The pending records sent when fewer than kInFlight sends wait (those done let go first),
  // else stored.
  void Stream() {
    std::lock_guard<std::mutex> lock(MpiLock());
    std::erase_if(flights_, [](Flight& f) {
      int done = 0;
      MPI_Test(&f.request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    if (flights_.size() >= kInFlight || pending_.size() > INT_MAX) {
      Store(pending_);
    } else {
      Flight& f = flights_.emplace_back();
      f.bytes.swap(pending_);
      MPI_Isend(f.bytes.data(), static_cast<int>(f.bytes.size()), MPI_CHAR, 0, kResultsTag,
                MPI_COMM_WORLD, &f.request);
    }
    pending_.clear();
  }

  struct Flight {  // a message on its way to process 0: its bytes live until it arrives
    std::string bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  std::FILE* file_;
  size_t stream_;  // the bytes a streamed message gathers; 0: none is streamed
  bool full_ = false, reading_ = false;
  std::vector<std::string> kept_;
  std::string pending_;         // records not yet sent (stream_)
  std::deque<Flight> flights_;  // sent, not yet known to have arrived
};

// A summary sent as kSplit: the rest decoded, the detail stored as it came (or decoded in
// place when `detail` is null: a run of few ranks).
StatusOr<analysis::RankSummary> Unsplit(std::string_view body,
                                        const std::shared_ptr<analysis::DetailStore>& detail) {
  base::ByteReader r{body};
  const std::string_view taken = r.Bytes(r.U64()), rest = r.Bytes(r.U64());
  StatusOr<analysis::RankSummary> s =
      r.done() ? analysis::DecodeSummary(rest) : InvalidArgument("a result cut short in transit");
  if (s.ok() && !analysis::GiveDetail(taken, detail, s->analysis))
    return InvalidArgument("a rank's detail cut short or corrupt in transit");
  return s;
}

// Decodes one process's packed results into their places in `out` (the run's file order).
// With many ranks each summary's per-rank detail goes to `detail` (ranks/detail_store.h).
void UnpackInto(std::string_view all, analysis::RankResults& out,
                const std::shared_ptr<analysis::DetailStore>& detail) {
  base::ByteReader r{all};
  while (!r.in.empty()) {
    const uint64_t index = r.U64(), kind = r.U64();
    const std::string_view bytes = r.Bytes(r.U64());
    if (!r.ok || index >= out.size()) break;
    out.Set(index, kind == kSplit
                       ? Unsplit(bytes, detail)
                       : StatusOr<analysis::RankSummary>(InvalidArgument(std::string(bytes))));
  }
}

// The results message `st` found (probed), received whole.
std::string ReceiveNow(const MPI_Status& st) {
  int len = 0;
  MPI_Get_count(&st, MPI_CHAR, &len);
  std::string bytes(static_cast<size_t>(std::max(len, 0)), '\0');
  MPI_Recv(bytes.data(), len, MPI_CHAR, st.MPI_SOURCE, kResultsTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return bytes;
}

// Process `from`'s packed results, received whole ("" when it sent none it could count in an int).
std::string ReceiveFrom(int from) {
  MPI_Status st;
  PollGently([&] {  // process 0 is often done with its share first
    int ready = 0;
    MPI_Iprobe(from, kResultsTag, MPI_COMM_WORLD, &ready, &st);
    return ready != 0;
  });
  return ReceiveNow(st);
}

constexpr int kAskTag = 19;    // another process to process 0: its next batch of files, please
constexpr int kGrantTag = 20;  // process 0 to another: the batch [first, last), empty at the end

// The files of a run handed out as the processes go, when every process sees every file (a
// shared file system): a process that reads faster, or has less else to do, reads more, where
// fixed shares left process 0 (which also keeps its results and decodes the others') reading
// for seconds after the others were done. Process 0 keeps the queue, a batch of files at a time
// in the run's order; each other process asks for its next batch as soon as it has one, so the
// answer is there when it needs it. Process 0 answers on its reading threads, between its own
// files, and once its reading is done until every other process was told the queue is empty.
// Claim is the reading's claim hook (trace::ReadManyOptions::claim); MPI is called from the
// reading threads one call at a time (MPI_THREAD_SERIALIZED).
class FileQueue {
 public:
  // `results` (process 0): what to do with a message of another process's results (Spill's
  // stream), called outside the MPI lock.
  using Results = std::function<void(std::string_view)>;
  FileQueue(size_t files, int rank, int size, Results results = {})
      : mine_(files, 0),
        files_(files),
        batch_(std::clamp<size_t>(files / (static_cast<size_t>(size) * 64), 1, 16)),
        rank_(rank),
        size_(size),
        results_(std::move(results)) {}

  bool Claim(size_t i) {
    std::vector<std::string> got;
    bool mine = false;
    {
      std::lock_guard<std::mutex> lock(MpiLock());
      if (rank_ == 0) Serve(got);
      while (!empty_ && i >= end_) {
        const auto [first, last] = Next();
        empty_ = first >= last;
        for (size_t k = first; k < last; ++k) mine_[k] = 1;
        end_ = std::max(end_, last);
      }
      mine = i < files_ && mine_[i] != 0;
    }
    for (const std::string& g : got) results_(g);
    return mine;
  }

  // After this process's reading: process 0 answers until every other process was told the
  // queue is empty; another takes the answer to its last question (which says so).
  void Finish() {
    std::lock_guard<std::mutex> lock(MpiLock());
    if (rank_ != 0) {
      while (!empty_) empty_ = Ask().first >= files_;
      return;
    }
    PollGently([&] {
      std::vector<std::string> got;
      Serve(got);
      for (const std::string& g : got) results_(g);
      return told_empty_ == size_ - 1;
    });
  }

 private:
  using Batch = std::pair<size_t, size_t>;

  Batch Take() {
    const size_t first = next_;
    next_ = std::min(files_, next_ + batch_);
    return {first, next_};
  }

  // The next batch: process 0 takes it; another receives the answer to its question and asks
  // the next one at once.
  Batch Next() {
    if (rank_ == 0) return Take();
    const Batch b = Ask();
    if (b.first < b.second) {
      Send(0, kAskTag, {0, 0});
      asked_ = true;
    }
    return b;
  }

  Batch Ask() {
    if (!asked_) Send(0, kAskTag, {0, 0});
    asked_ = false;
    uint64_t got[2] = {0, 0};
    MPI_Recv(got, 2, MPI_UINT64_T, 0, kGrantTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return {static_cast<size_t>(got[0]), static_cast<size_t>(got[1])};
  }

  static void Send(int to, int tag, Batch b) {
    uint64_t out[2] = {b.first, b.second};
    MPI_Send(out, 2, MPI_UINT64_T, to, tag, MPI_COMM_WORLD);
  }

  // Process 0: a batch for each question waiting, and the results messages that came.
  void Serve(std::vector<std::string>& got) {
    for (int ready = results_ ? 1 : 0; ready != 0;) {
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, kResultsTag, MPI_COMM_WORLD, &ready, &st);
      if (ready != 0) got.push_back(ReceiveNow(st));
    }
    for (;;) {
      int waiting = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, kAskTag, MPI_COMM_WORLD, &waiting, &st);
      if (waiting == 0) return;
      uint64_t question[2];
      MPI_Recv(question, 2, MPI_UINT64_T, st.MPI_SOURCE, kAskTag, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      const Batch b = Take();
      Send(st.MPI_SOURCE, kGrantTag, b);
      if (b.first >= b.second) ++told_empty_;
    }
  }

  std::vector<char> mine_;  // per file: this process reads it
  size_t files_, batch_, next_ = 0, end_ = 0;
  int rank_, size_, told_empty_ = 0;
  Results results_;
  bool empty_ = false, asked_ = false;
};

// mpirun binds each process to a core of its own (with as many processes as cores). Once every
// other process has sent its last results it only waits, so process 0 may build and write the
// report on every core of its node (the CSV files are written on two threads). The kernel keeps
// the mask within the job's cpuset; if it refuses, nothing changes.
void UseEveryCoreOfTheNode() {
  cpu_set_t all;
  CPU_ZERO(&all);
  const long cores = sysconf(_SC_NPROCESSORS_CONF);
  for (long c = 0; c < cores && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &all);
  sched_setaffinity(0, sizeof all, &all);
}

// What a process reads of a run: every file, each claimed from the queue as it comes (every
// process sees every file), or the files it owns (its k-th is the run's file index[k]).
struct Share {
  const trace::TraceRun& run;
  std::optional<FileQueue> queue;
  std::vector<size_t> index;
  std::vector<std::string> mine;

  Share(const trace::SharedListing& shared, size_t r, int rank, int size, bool as_we_go,
        FileQueue::Results results = {})
      : run(shared.listing.runs[r]) {
    if (as_we_go) {
      queue.emplace(run.files.size(), rank, size, std::move(results));
      return;
    }
    index = trace::FilesOf(shared, r, rank);
    for (size_t i : index) mine.push_back(run.files[i]);
  }
  const std::vector<std::string>& files() const { return queue ? run.files : mine; }
  size_t FileOf(size_t k) const { return queue ? k : index[k]; }
  std::function<bool(size_t)> claim() {
    if (!queue) return {};
    return [this](size_t i) { return queue->Claim(i); };
  }
};

// A process other than 0: its share summarised and sent (Spill), the rest once process 0 takes
// it, so that the blocking sends (which spin until then) run at full speed; then an empty
// message: the end. One over INT_MAX bytes (a single summary that large) cannot be counted in a
// message: it ends the results early, said as missing ones.
void SendShare(Share& share, const AnalyzeFlags& f) {
  Spill spill(share.queue.has_value());
  SummariseEach(
      share.files(), f, share.run.dir,
      [&](size_t k, StatusOr<analysis::RankSummary> res) {
        spill.Add(share.FileOf(k), std::move(res));
      },
      share.claim());
  if (share.queue) share.queue->Finish();
  int go = 0;
  MPI_Request asked;
  MPI_Irecv(&go, 1, MPI_INT, 0, kGoTag, MPI_COMM_WORLD, &asked);
  WaitGently(asked);
  spill.EndStream();
  std::string chunk;
  for (bool more = spill.Next(&chunk);; more = spill.Next(&chunk)) {
    const int len = !more || chunk.size() > INT_MAX ? 0 : static_cast<int>(chunk.size());
    MPI_Send(chunk.data(), len, MPI_CHAR, 0, kResultsTag, MPI_COMM_WORLD);
    if (len == 0) break;
  }
}

// This process's share of run `r` of the shared listing, summarised: the files it owns, or with
// `as_we_go` (every process sees every file) those it claims from the FileQueue. Process 0
// keeps its own results (their detail spilled with many ranks) and decodes the others' one
// message at a time (a few MB; as they come, between its own files, when they stream), letting
// each one's bytes go once decoded, so it holds a few messages' bytes at most; it returns every
// file's result. The others send theirs and return nothing.
analysis::RankResults ShareOfRun(const trace::SharedListing& shared, size_t r,
                                 const AnalyzeFlags& f, int rank, int size, bool as_we_go) {
  if (rank != 0) {
    Share share(shared, r, rank, size, as_we_go);
    SendShare(share, f);
    return analysis::RankResults{};
  }
  const trace::TraceRun& run = shared.listing.runs[r];
  analysis::RankResults out(run.files.size());
  for (size_t i = 0; i < run.files.size(); ++i)
    out.Set(i, InvalidArgument(fmt::format("file {}: no result from its MPI process", i)));
  const bool many = run.files.size() > analysis::kInlineRanks;
  const auto detail = many ? analysis::DetailStore::Open() : nullptr;
  Share share(shared, r, rank, size, as_we_go,
              [&](std::string_view chunk) { UnpackInto(chunk, out, detail); });
  SummariseEach(
      share.files(), f, run.dir,
      [&](size_t k, StatusOr<analysis::RankSummary> res) {
        if (res.ok() && many) analysis::KeepUntilReport(detail, *res);
        out.Set(share.FileOf(k), std::move(res));
      },
      share.claim());
  if (share.queue) share.queue->Finish();
  for (int from = 1; from < size; ++from) {
    int go = 1;
    MPI_Send(&go, 1, MPI_INT, from, kGoTag, MPI_COMM_WORLD);
    for (std::string chunk = ReceiveFrom(from); !chunk.empty(); chunk = ReceiveFrom(from))
      UnpackInto(chunk, out, detail);
  }
  if (r + 1 == shared.listing.runs.size()) UseEveryCoreOfTheNode();  // the others only wait now
  return out;
}

// Whether every process listed the same bytes: the least and greatest hash agree.
bool ListedAlike(const std::string& bytes) {
  const uint64_t h = std::hash<std::string>{}(bytes);
  uint64_t least = h, most = h;
  MPI_Allreduce(&h, &least, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return least == most;
}

// Every process's listing at process 0 (its own at index 0); elsewhere none.
std::vector<std::string> GatherListings(const std::string& bytes, int rank, int size) {
  const int len = bytes.size() > INT_MAX ? 0 : static_cast<int>(bytes.size());
  std::vector<int> lens(static_cast<size_t>(size)), at(static_cast<size_t>(size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int64_t total = 0;  // counted at process 0, then told to all: they must take the same way
  for (int p = 0; p < size; ++p)
    at[static_cast<size_t>(p)] = static_cast<int>(total), total += lens[static_cast<size_t>(p)];
  MPI_Bcast(&total, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  // Past INT_MAX bytes in all, the displacements overflow: each process's listing is then sent
  // on its own, the same bytes.
  std::string all(rank == 0 && total <= INT_MAX ? static_cast<size_t>(total) : 0, '\0');
  std::vector<std::string> out;
  if (total <= INT_MAX) {
    MPI_Gatherv(bytes.data(), len, MPI_CHAR, all.data(), lens.data(), at.data(), MPI_CHAR, 0,
                MPI_COMM_WORLD);
    for (int p = 0; rank == 0 && p < size; ++p)
      out.push_back(all.substr(static_cast<size_t>(at[static_cast<size_t>(p)]),
                               static_cast<size_t>(lens[static_cast<size_t>(p)])));
    return out;
  }
  if (rank != 0) {
    MPI_Send(bytes.data(), len, MPI_CHAR, 0, kResultsTag, MPI_COMM_WORLD);
    return out;
  }
  out.push_back(bytes);
  for (int p = 1; p < size; ++p) out.push_back(ReceiveFrom(p));
  return out;
}

// The listing every process reads from, with each file's owner. On a shared file system every
// process listed the same, and keeps its own; else (node-local disks) process 0 merges the
// listings, assigns each file to a process that sees it, and sends the result to every process.
// `everywhere`: every process listed the same.
StatusOr<trace::SharedListing> ShareListing(const StatusOr<trace::TraceListing>& mine, int rank,
                                            int size, bool& everywhere) {
  trace::TraceListing own = mine.ok() ? *mine : trace::TraceListing{};  // none: nothing here
  const std::string bytes = trace::EncodeListing(own);
  everywhere = ListedAlike(bytes);
  if (everywhere) return trace::SameEverywhere(std::move(own), size);
  std::string shared;
  if (const std::vector<std::string> all = GatherListings(bytes, rank, size); rank == 0) {
    std::vector<trace::TraceListing> listings;
    for (const std::string& one : all) {
      StatusOr<trace::TraceListing> l = trace::DecodeListing(one);
      listings.push_back(l.ok() ? std::move(*l) : trace::TraceListing{});
    }
    trace::SharedListing merged = trace::MergeListings(listings);
    trace::AssignOwners(merged, size);
    shared = trace::EncodeSharedListing(merged);
  }
  uint64_t n = shared.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (n > INT_MAX) return InvalidArgument("the merged listing of the MPI processes is over 2 GB");
  shared.resize(n);
  MPI_Bcast(shared.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return trace::DecodeSharedListing(shared);
}

}  // namespace

int RunAnalyzeMpi(const AnalyzeFlags& f, const StatusOr<trace::TraceListing>& listing) {
  int initialized = 0, threads = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  if (!initialized)
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &threads);
  else
    MPI_Query_thread(&threads);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = kExitOk;
  bool everywhere = false;  // every process listed the same files
  StatusOr<trace::SharedListing> shared = ShareListing(listing, rank, size, everywhere);
  if (!shared.ok() || shared->listing.runs.empty()) {
    if (rank == 0) {
      fmt::print(stderr, "trainprof: {}\n",
                 !shared.ok()   ? shared.status().message()
                 : listing.ok() ? fmt::format("{}: no MPI process found a trace", f.path)
                                : listing.status().message());
    }
    code = kExitBadInput;
  } else {
    // Files are shared as the processes go when every process sees every file and every one
    // may call MPI from its reading threads; else each reads the files it owns.
    int can = everywhere && threads >= MPI_THREAD_SERIALIZED ? 1 : 0, all = 0;
    MPI_Allreduce(&can, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    const bool as_we_go = all == 1 && size > 1;
    if (rank == 0) {
      size_t next = 0;  // AnalyzeRuns asks for the runs in their order
      code = AnalyzeRuns(f, shared->listing, [&](const trace::TraceRun&) {
        return ShareOfRun(*shared, next++, f, rank, size, as_we_go);
      });
    } else {
      for (size_t r = 0; r < shared->listing.runs.size(); ++r)
        ShareOfRun(*shared, r, f, rank, size, as_we_go);
    }
  }
  // Every process exits with the worst code: process 0's, or a digest another could not write.
  if (DigestFailed().load()) code = std::max(code, kExitNoOutput);
  int worst = code;
  MPI_Request reduced;  // the others wait here while process 0 writes the report
  MPI_Iallreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &reduced);
  WaitGently(reduced);
  code = worst;
  MPI_Finalize();
  return code;
}
#endif

}  // namespace trainprof::cli
