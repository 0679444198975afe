// What one rank contributes to the multi-rank report beyond its own views: who it is (RankInfo:
// the few fields of its TraceModel the report shows), its communication kernels before matching,
// its communication breakdown per step, its recommendation candidates and its critical paths.
// They are computed while the rank's model is alive (AnalyzeRank, analyze.h), so the report,
// and `trainprof merge`, need only these (rank_summary.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/ranks/critical_path.h"
#include "analysis/rule_keys.h"
#include "report/report.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// A rank's devices (TraceModel::devices), one list shared by every rank that lists the same
// devices in this process: a trace lists its node's GPUs, about 200 bytes each, and 100,000
// ranks of 8-GPU nodes would hold 1.5 KB a rank of a few distinct lists. Read as the list.
class SharedDevices {
 public:
  SharedDevices() = default;
  SharedDevices(const std::vector<trace::DeviceInfo>& devices);  // NOLINT: a list converts
  const std::vector<trace::DeviceInfo>& list() const;
  bool empty() const { return list().empty(); }
  size_t size() const { return list().size(); }
  const trace::DeviceInfo& front() const { return list().front(); }
  auto begin() const { return list().begin(); }
  auto end() const { return list().end(); }

 private:
  std::shared_ptr<const std::vector<trace::DeviceInfo>> p_;  // null: none
};

// The fields of a TraceModel that the report reads once the events are gone (same names).
struct RankInfo {
  std::string path;    // the file read
  std::string source;  // TraceModel::source: "kineto", "nsys"
  int64_t rank = 0;
  int64_t world_size = 0;
  std::string host_name;
  bool truncated = false;
  int64_t json_bytes = 0;
  int64_t events = 0;  // TraceModel::size()
  SharedDevices devices;
  std::vector<std::pair<int64_t, int64_t>> peak_allocated_bytes;  // device, bytes
  std::vector<base::Diagnostic> diagnostics;
  bool pytorch = true;  // ProfilesPyTorch
  size_t size() const { return static_cast<size_t>(events); }
};
// Whether the profile is of a PyTorch program: a PyTorch profiler (Kineto) trace, or an
// operator name only PyTorch writes (emit_nvtx's "aten::mm, op_id = 3", autograd's ranges).
// CUDA programs without PyTorch (an Nsight export of an HPC code) get advice in their terms.
bool ProfilesPyTorch(const trace::TraceModel& m);
RankInfo InfoOf(const trace::TraceModel& m);
std::vector<RankInfo> InfosOf(const std::vector<trace::TraceModel>& models);

struct Candidate {
  std::string key;  // the rule (a RuleKey's): "dataloader", "host_wait", "rank_imbalance", ...
  int64_t rank = 0;
  report::Severity severity = report::Severity::kWarning;
  bool root_cause = false;  // a cause (the DataLoader), not a symptom (low GPU utilization)
  double saves_ns = 0;      // step time it could save per step; 0 when there is no estimate
  double figure = 0;        // the headline figure, merged across ranks as a range
  std::string figure_format = "{:.1f}%";
  std::string headline;  // "{fig}" stands for the figure (or range)
  std::string detail;    // this rank's numbers, e.g. "12.1 ms of 36.5 ms"
  std::string advice;
};

// Per rank and step, the plugin's four figures; they sum to the step time.
struct CommBreakdown {
  int64_t computation_ns = 0;    // computation kernels not overlapped by communication
  int64_t overlap_ns = 0;        // computation and communication kernels at once
  int64_t communication_ns = 0;  // communication kernels not overlapped by computation
  int64_t other_ns = 0;          // no kernel runs
};

// What a rank's GPU and host had done by a moment on its clock, counted from the trace's start:
// GPU compute (kernels other than communication, their union) and the data loader while no
// compute kernel ran. Two marks' difference splits the time between them (cross_rank_path.h).
struct PathMark {
  int64_t compute_ns = 0, data_ns = 0;
};
struct StepMarks {
  PathMark begin, end;
};

// How a communication kernel is known within its group on every rank: its sequence number
// ("Seq"), its comms id ("Comms Id"), else its place in the order of issue.
enum class CommKey : uint8_t { kIssue, kSeq, kCommsId };

// A communication kernel of one rank, described but not yet matched (collectives.h), in order
// of issue. Its names are indices into the rank's RankAnalysis::comm_names, which holds each
// process group, type and comms id once: at ten thousand ranks of thousands of kernels, these
// records are most of what a report holds.
struct RankCommOp {
  int64_t key = 0;  // the sequence number, the order of issue in the group, or the comms id's index
                    // in comm_names
  int64_t bytes = -1;      // message size; -1 when the trace does not give it
  int64_t group_size = 0;  // the "Group size" arg, else the world size
  int64_t start_ns = 0, end_ns = 0;
  PathMark at_start, at_end;
  uint32_t group = 0;  // the process group's name; 0: "", the trace names none
  uint32_t type = 0;   // "allreduce", ...; 0: "", unknown
  CommKey key_kind = CommKey::kIssue;
  bool by_seq() const { return key_kind != CommKey::kIssue; }  // a sequence number or comms id
};

// A rank's names for its RankCommOps: [0] is "", then each distinct name once.
using CommNames = std::vector<std::string>;
// The op's identity in its group as the report writes it: "seq 12", "comms id 7", "issue 3".
std::string CommKeyText(const RankCommOp& o, const CommNames& names);

// One critical-path window of one rank, with the names resolved (critical_path_report.h).
struct CpWindow {
  std::string label;  // "ProfilerStep#3", "forward:1"
  std::string note;   // set when the window could not be analysed: the section's note
  int64_t length_ns = 0, nodes = 0;
  std::array<int64_t, kNumCpCategories> category_ns{};
  struct Top {
    std::string name;
    CpCategory category = CpCategory::kNone;
    int64_t ns = 0;
  };
  std::vector<Top> top;  // longest first
  struct Edge {          // the path's edges in time order, for critical_path.trace.json; then, with
                         // CpOptions::all_edges, the graph's other edges (critical false)
    int64_t from_ns = 0, to_ns = 0;
    CpEdge type = CpEdge::kOperator;
    CpCategory category = CpCategory::kNone;
    std::string name;  // the event its time is attributed to, else the edge type
    int64_t weight_ns = 0;
    uint32_t from_node = 0, to_node = 0;        // node ids in the graph (HTA's critical_path_nodes)
    uint32_t from = 0, to = 0;                  // the nodes' events, as indices into `events`
    bool from_start = false, to_start = false;  // the node is its event's start (else its end)
    int64_t attributed = -1;  // the event its time is attributed to, in `events`; -1: none
    bool critical = true;     // on the path
  };
  std::vector<Edge> edges;
  struct Event {  // every event on the path or attributed an edge's time, ascending
    std::string name, kind;
    int64_t ts_ns = 0, dur_ns = 0, stream = -1;
    bool node = true;  // the event has a node on the path
  };
  std::vector<Event> events;
  double pct(CpCategory c) const {
    int64_t sum = 0;
    for (int64_t v : category_ns) sum += v;
    return sum > 0 ? 100.0 * static_cast<double>(category_ns[static_cast<int>(c)]) / sum : 0;
  }
};

}  // namespace trainprof::analysis
