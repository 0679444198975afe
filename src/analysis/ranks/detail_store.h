// Many ranks' detail in a scratch file. The part of a rank's analysis that only the rank's rows
// of the per-rank detail tables read (CSV only past kInlineRanks ranks: the memory curves, role
// timelines, allocations, memory per operator and live at the peak, FLOPs per operator, the
// kernels per operator, the memory by role at the peak, the operators by shape and by stack),
// with the lists that a pass across ranks reads besides (the modules, operators, kernels,
// roofline shapes and recommendation candidates: AcrossList) and the rank's tables (RankTables:
// its GPU summary, HTA's figures and top kernels, the idle causes and gaps, the categories, the
// memcpy bandwidth, the FLOPs figures), is nine tenths of a real rank's summary, and the part
// whose size depends on what the rank ran. The process that builds a report
// of thousands of ranks moves it out of each summary as the summary arrives (Spill) and reads it
// back for the rows (DetailHold), or one list alone for a pass across ranks (ListOf), so it holds
// the rest only: the same few kilobytes whatever a rank holds. The report is the same byte for
// byte.
//
//   auto store = DetailStore::Open();            // null: no scratch file; nothing is spilled
//   Spill(store, summary.analysis);              // the detail goes to the file
//   { DetailHold hold(a);  ... a.memory.allocations ... }  // back in `a` while held
//   std::vector<KernelRow> scratch;
//   for (const KernelRow& k : KernelsOf(a, scratch)) ...  // that list alone
//   RankTables tables;
//   TablesOf(a, tables).hta.temporal ...                  // the tables alone
//
// A process that writes the report once and reads no rank's detail after its CSV rows
// (`trainprof analyze`) lets each record go as its rows are written (RetireOnceWritten), so the
// file shrinks while the CSV files grow: the pages its records held take the CSV text, and a
// $TMPDIR on tmpfs (memory) gets its memory back as the rows are written.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "analysis/rank_analysis.h"

namespace trainprof::analysis {

class DetailStore {
 public:
  // A store on a new scratch file in $TMPDIR (else /tmp), unlinked at once; null when none can
  // be made (then nothing is spilled).
  static std::shared_ptr<DetailStore> Open();
  ~DetailStore();
  DetailStore(const DetailStore&) = delete;
  DetailStore& operator=(const DetailStore&) = delete;

  // Appends a record; its offset, or -1 when the file takes no more (a full disk: the record
  // and every later one stay in their analyses).
  int64_t Append(std::string_view bytes);
  // Puts the detail of `a` (spilled here) back in it while it is held: the first hold of a
  // record reads it back, the last one's release clears it again. Thread-safe: the first hold
  // reads and decodes outside the lock (two threads bring two ranks back at once), a hold that
  // comes meanwhile waits for it.
  void Acquire(RankAnalysis& a);
  void Release(RankAnalysis& a);
  // The bytes of `a`'s across list `list` (spilled here) into `bytes`, whether or not it is
  // held.
  void ReadList(const RankAnalysis& a, AcrossList list, std::string& bytes) const;
  // Drops the holds of `a`, whose detail stays in it (Unspill).
  void Forget(const RankAnalysis& a);
  // From now on, a record retired (Retire) is cut out of the file at its last release; nothing
  // may read it again (an Acquire or ReadList of it is a bug, and aborts).
  void RetireOnceWritten();
  // `a`'s rows are written: its record goes when its holds end (now, when it has none), if
  // RetireOnceWritten was called; else nothing.
  void Retire(const RankAnalysis& a);

 private:
  explicit DetailStore(int fd) : fd_(fd) {}
  // `bytes.size()` bytes of record `at` (the scratch file is only appended to, so a record
  // written is read without the lock); a failing disk aborts: a report without them would be
  // wrong silently.
  void ReadBack(int64_t at, std::string& bytes) const;
  // The record's whole pages given back to the file system (a hole); the pages it shares with
  // its neighbours stay. Under mu_.
  void CutOut(const RankAnalysis& a);
  // Aborts when `a`'s record was cut out. Under mu_.
  void CheckNotCut(const RankAnalysis& a) const;
  int fd_;
  int64_t end_ = 0;
  bool full_ = false;
  struct Hold {
    int count = 0;
    bool back = false;    // its detail is read back and decoded
    bool retire = false;  // cut out at the last release
  };
  mutable std::mutex mu_;
  std::condition_variable back_;                 // a first hold's detail is back
  bool retire_ = false;                          // RetireOnceWritten
  std::unordered_set<const RankAnalysis*> cut_;  // the records cut out
  std::unordered_map<const RankAnalysis*, Hold> holds_;
};

// Moves the detail of `a` to `store` (none: leaves it). Call once a summary is final (Compact
// may follow); a second call does nothing.
void Spill(const std::shared_ptr<DetailStore>& store, RankAnalysis& a);

// The detail of `a` back in it for good (a report of few ranks reads it everywhere).
void Unspill(RankAnalysis& a);

// The detail of `a` as bytes that carry its counts (SpilledDetail), for another process to
// spill as it came (--mpi's process 0 stores the others' detail without decoding it); the lists
// leave `a`. GiveDetail puts such bytes into `a`: spilled to `store` when it takes them, else
// decoded in place. False: the bytes are cut short or corrupt (`a` then holds no detail).
std::string TakeDetail(RankAnalysis& a);
bool GiveDetail(std::string_view bytes, const std::shared_ptr<DetailStore>& store, RankAnalysis& a);

// The detail of `a` back in it until as many LetDetailGo (nothing to do when it is not spilled).
// `a` is const to its readers; the store owns those fields while they are out.
void HoldDetail(const RankAnalysis& a);
void LetDetailGo(const RankAnalysis& a);
// `a`'s detail tables are written (DetailStore::Retire; nothing when it is not spilled).
void RetireDetail(const RankAnalysis& a);
// The stores of `analyses` retire each record once its rows are written (RetireOnceWritten):
// for a process that writes their report once and reads no detail after it.
void RetireDetailOnceWritten(const std::vector<RankAnalysis>& analyses);

// The detail of `a` present for as long as the hold lives (nothing to do when it is not
// spilled).
class DetailHold {
 public:
  explicit DetailHold(const RankAnalysis& a) : a_(a) { HoldDetail(a_); }
  ~DetailHold() { LetDetailGo(a_); }
  DetailHold(const DetailHold&) = delete;
  DetailHold& operator=(const DetailHold&) = delete;

 private:
  const RankAnalysis& a_;
};

// A spilled list that a pass across ranks reads (AcrossList): in `a` when it is not spilled,
// else its bytes alone read back and decoded into `scratch` (one of the first slices of its
// record), so that the pass reads a few kilobytes of each rank's detail and decodes nothing else.
const std::vector<ModuleRow>& ModulesOf(const RankAnalysis& a, std::vector<ModuleRow>& scratch);
const std::vector<OperatorRow>& OperatorsOf(const RankAnalysis& a,
                                            std::vector<OperatorRow>& scratch);
const std::vector<KernelRow>& KernelsOf(const RankAnalysis& a, std::vector<KernelRow>& scratch);
const std::vector<ShapeRow>& ShapesOf(const RankAnalysis& a,
                                      std::vector<ShapeRow>& scratch);  // flops_shapes
const std::vector<Candidate>& CandidatesOf(const RankAnalysis& a, std::vector<Candidate>& scratch);
// The rank's tables (RankAnalysis::tables): in `a` when they are there (not spilled, or held),
// else read back alone into `scratch`. No hold of `a` may begin or end on another thread
// meanwhile (the CSV batches hold a rank on each of their threads before either reads it).
const RankTables& TablesOf(const RankAnalysis& a, RankTables& scratch);

// The detail's bytes (the across lists first, in AcrossList's order, each ending at its `ends`),
// read back into `a` (false: cut short), and its lists let go (with their memory). In
// summary_codec.cc, beside the summary's own fields.
std::string EncodeDetail(const RankAnalysis& a, std::array<int64_t, kAcrossLists>* ends = nullptr);
bool DecodeDetail(std::string_view bytes, RankAnalysis& a);
bool DecodeList(std::string_view bytes, std::vector<ModuleRow>& rows);
bool DecodeList(std::string_view bytes, std::vector<OperatorRow>& rows);
bool DecodeList(std::string_view bytes, std::vector<KernelRow>& rows);
bool DecodeList(std::string_view bytes, std::vector<ShapeRow>& rows);
bool DecodeList(std::string_view bytes, std::vector<Candidate>& rows);
bool DecodeList(std::string_view bytes, RankTables& tables);  // the tables alone
void FreeDetail(RankAnalysis& a);
// FreeDetail, but the lists are kept on this thread for its next DecodeDetail (a few ranks'
// at most): for a rank's detail decoded to be read and let go.
void RecycleDetail(RankAnalysis& a);

// The lengths readers across ranks ask of spilled lists, whether or not they are out.
int64_t ShapeRows(const RankAnalysis& a);     // operators_by_shape
int64_t StackRows(const RankAnalysis& a);     // operators_by_stack
int64_t ModuleRows(const RankAnalysis& a);    // modules
int64_t FlopsRows(const RankAnalysis& a);     // flops_operators
int64_t ModuleRootNs(const RankAnalysis& a);  // the device time of the modules at depth 0

}  // namespace trainprof::analysis
