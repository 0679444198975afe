// HTA's critical path of one rank over a window (an annotation's instance, or a step): a graph
// whose nodes are the starts and ends of CPU operators, runtime calls and GPU work, with edges
// for operator nesting on each CPU thread, kernel launches, kernels following each other on a
// stream, and synchronisations (cuda_sync "Stream Sync" / "Context Sync" into the runtime call
// that waited); the longest path through it, and its time by HTA's categories. The algorithm and
// where it differs from HTA 0.6.1 are in docs/trace-analysis.md.
//
//   StatusOr<CriticalPath> p = ComputeCriticalPath(model, begin_ns, end_ns);
//   double cpu = p->pct(CpCategory::kCpuBound);
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::analysis {

enum class CpEdge : uint8_t { kOperator, kDependency, kLaunchDelay, kKernelKernelDelay, kSync };
inline constexpr int kNumCpEdges = 5;
const char* CpEdgeName(CpEdge e);  // HTA's: "critical_path_operator", ...

// HTA's bound_by categories, in its order; kNone is the dependency and sync edges (always 0 s).
enum class CpCategory : uint8_t {
  kCpuBound,
  kGpuComputeBound,
  kGpuCommunicationBound,
  kGpuKernelKernelOverhead,
  kGpuKernelLaunchOverhead,
  kDataLoading,
  kNone,
};
inline constexpr int kNumCpCategories = 7;
const char* CpCategoryName(CpCategory c);  // "cpu_bound", ..., "" for kNone

struct CriticalPath {
  int64_t length_ns = 0;
  int64_t nodes = 0;  // nodes on the path
  std::array<int64_t, kNumCpCategories> category_ns{};
  std::array<int64_t, kNumCpEdges> edge_ns{};
  // Events on the path by the time attributed to them, longest first.
  struct Event {
    uint32_t event = 0;
    int64_t ns = 0;
    CpCategory category = CpCategory::kCpuBound;
  };
  std::vector<Event> top;
  std::vector<uint32_t> events;  // every event with a node on the path, ascending
  // The path's edges in time order: from one node's time to the next's. A node is an event's
  // start or end; HTA's overlay draws an arrow from the one to the other.
  struct Step {
    int64_t from_ns = 0, to_ns = 0;
    CpEdge type = CpEdge::kOperator;
    CpCategory category = CpCategory::kNone;
    int64_t event = -1;  // the event its time is attributed to; -1 for none
    int64_t weight_ns = 0;
    uint32_t from_node = 0, to_node = 0;    // node ids in the graph
    uint32_t from_event = 0, to_event = 0;  // the nodes' events
    bool from_start = false, to_start = false;
  };
  std::vector<Step> steps;
  // With CpOptions::all_edges: every other edge of the graph (HTA's overlay with
  // show_all_edges), leaving out launch edges of no weight, as HTA's does.
  std::vector<Step> others;
  double pct(CpCategory c) const {
    int64_t sum = 0;
    for (int64_t v : category_ns) sum += v;
    return sum > 0 ? 100.0 * static_cast<double>(category_ns[static_cast<int>(c)]) / sum : 0;
  }
};

// The window of the `instance`-th (from 0) range whose name contains `annotation`, by start time,
// to the end of the `last`-th (-1: the same one; HTA's instance_id=(first, last)); an empty
// `annotation` is the whole trace, as in HTA. Errors: no such annotation or instances.
StatusOr<std::pair<int64_t, int64_t>> FindAnnotationWindow(const trace::TraceModel& m,
                                                           const std::string& annotation,
                                                           int instance, int last = -1);

// `data_load`: HTA's data_load_events, regular expressions (ECMAScript) searched in the names of
// CPU events: those events get nodes, and their time on the path is data_loading.
struct CpOptions {
  size_t top_events = 10;
  std::vector<std::string> data_load;
  bool all_edges = false;  // fill CriticalPath::others
};

// Errors: a data_load pattern that is not a regular expression; the graph has a cycle; the
// message says which.
StatusOr<CriticalPath> ComputeCriticalPath(const trace::TraceModel& m, int64_t begin_ns,
                                           int64_t end_ns, const CpOptions& o = {});

}  // namespace trainprof::analysis
