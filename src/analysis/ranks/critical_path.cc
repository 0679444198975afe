#include "analysis/ranks/critical_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>

#include "analysis/kernel_class.h"

namespace trainprof::analysis {

namespace {

using trace::EventKind;

constexpr uint32_t kNoNode = UINT32_MAX;

struct Node {
  int64_t ts = 0;
  uint32_t event = 0;
  bool start = false;
};

struct Edge {
  uint32_t from = 0, to = 0;
  CpEdge type = CpEdge::kOperator;
  int64_t weight = 0;
  int64_t attributed = -1;  // the event the edge's time belongs to; -1: none
};

// HTA's blocking calls (their time is the GPU's, reached through a sync edge), and HIP's names.
bool IsBlockingCall(std::string_view n) {
  if (n.starts_with("hip"))
    n.remove_prefix(3);
  else if (n.starts_with("cuda"))
    n.remove_prefix(4);
  else
    return false;
  return n == "DeviceSynchronize" || n == "StreamSynchronize" || n == "EventQuery" ||
         n == "EventSynchronize" || n == "Memcpy" || n == "MemcpyAsync";
}

bool IsSyncName(std::string_view n) {
  return n == "Stream Sync" || n == "Context Sync" || n == "Event Sync" || n == "Stream Wait Event";
}

class Graph {
 public:
  Graph(const trace::TraceModel& m, int64_t begin, int64_t end) : m_(m), begin_(begin), end_(end) {}
  Status SetDataLoad(const std::vector<std::string>& patterns);
  Status Build();
  StatusOr<CriticalPath> Longest(size_t top_events) const;
  // Every edge not on `p`'s path into p.others (launch edges of no weight left out).
  void AddOtherEdges(CriticalPath& p) const;

 private:
  bool InWindow(size_t i) const {
    return m_.ts_ns[i] >= begin_ && m_.ts_ns[i] <= end_ && m_.dur_ns[i] > 0;
  }
  bool IsCpu(size_t i) const { return m_.stream_of(i) == -1 && !trace::IsGpuKind(m_.kind[i]); }
  bool IsSync(size_t i) const {
    return m_.kind[i] == EventKind::kOther && m_.stream_of(i) != -1 && IsSyncName(m_.name_of(i));
  }
  void SelectEvents();
  void MakeNodes();
  void AddEdge(uint32_t from, uint32_t to, CpEdge type, bool zero = false);
  void Attribute(int64_t parent);
  void CallStackEdges(const std::vector<uint32_t>& thread, const std::vector<int64_t>& parent);
  void CpuEdges();
  void GpuEdges();
  void IndexLaunches();
  void EventSyncEdge(uint32_t e, uint32_t runtime, std::map<int64_t, uint32_t>* waits);
  CpCategory CategoryOf(const Edge& e) const;
  bool IsDataLoad(size_t i) const {
    return m_.name[i] < data_load_.size() && data_load_[m_.name[i]];
  }

  const trace::TraceModel& m_;
  int64_t begin_, end_;
  std::unordered_map<int64_t, uint32_t> runtime_by_corr_;
  std::vector<uint32_t> with_nodes_;  // events that get a start and an end node
  std::vector<uint32_t> cpu_;         // every CPU event in the window (the call stacks)
  std::vector<uint32_t> gpu_;         // GPU work and cuda_sync events launched in the window
  std::vector<Node> nodes_;
  std::unordered_map<uint32_t, uint32_t> start_, end_node_;
  std::vector<Edge> edges_;
  bool records_events_ = false;  // the trace has cudaEventRecord calls
  // Per stream, its GPU work in the window as (launch call's start, end node), by launch.
  std::map<int64_t, std::vector<std::pair<int64_t, uint32_t>>> launched_;
  std::vector<bool> data_load_;  // by name id: the name matches a data_load pattern
};

Status Graph::SetDataLoad(const std::vector<std::string>& patterns) {
  std::vector<std::regex> res;
  for (const std::string& p : patterns) {
    try {
      res.emplace_back(p);
    } catch (const std::regex_error& e) {
      return InvalidArgument(
          fmt::format("data_load_events: \"{}\" is not a regular expression ({})", p, e.what()));
    }
  }
  if (res.empty()) return Status::Ok();
  data_load_.assign(m_.names.size(), false);
  for (uint32_t id = 0; id < m_.names.size(); ++id)
    for (const std::regex& re : res)
      if (std::regex_search(m_.names[id], re)) data_load_[id] = true;
  return Status::Ok();
}

void Graph::SelectEvents() {
  for (size_t i = 0; i < m_.size(); ++i) {
    EventKind k = m_.kind[i];
    if ((k == EventKind::kRuntime || k == EventKind::kDriver) && m_.correlation[i] != trace::kNone)
      runtime_by_corr_.emplace(m_.correlation[i], static_cast<uint32_t>(i));
    if (k == EventKind::kRuntime && !records_events_)
      records_events_ = m_.name_of(i) == "cudaEventRecord" || m_.name_of(i) == "hipEventRecord";
  }
  for (size_t i = 0; i < m_.size(); ++i) {
    const auto e = static_cast<uint32_t>(i);
    EventKind k = m_.kind[i];
    if (IsCpu(i)) {
      if (!InWindow(i)) continue;
      cpu_.push_back(e);
      if (k == EventKind::kCpuOp || k == EventKind::kRuntime || k == EventKind::kDriver ||
          IsDataLoad(i))
        with_nodes_.push_back(e);
      continue;
    }
    if (!trace::IsGpuKind(k) && !IsSync(i)) continue;
    auto r = runtime_by_corr_.find(m_.correlation[i]);
    if (r == runtime_by_corr_.end() || !InWindow(r->second)) continue;
    gpu_.push_back(e);
    with_nodes_.push_back(e);
  }
}

void Graph::MakeNodes() {
  for (uint32_t e : with_nodes_) {
    nodes_.push_back({m_.ts_ns[e], e, true});
    nodes_.push_back({m_.end_ns(e), e, false});
  }
  std::stable_sort(nodes_.begin(), nodes_.end(),
                   [](const Node& a, const Node& b) { return a.ts < b.ts; });
  for (uint32_t n = 0; n < nodes_.size(); ++n)
    (nodes_[n].start ? start_ : end_node_)[nodes_[n].event] = n;
}

void Graph::AddEdge(uint32_t from, uint32_t to, CpEdge type, bool zero) {
  int64_t w = 0;
  if (type != CpEdge::kDependency && type != CpEdge::kSync && !zero)
    w = std::max<int64_t>(0, nodes_[to].ts - nodes_[from].ts);  // HTA zeroes negative weights
  edges_.push_back({from, to, type, w, -1});
}

// HTA's attribution of operator and kernel-kernel edges: to the source when it is a start (or a
// kernel before a gap), to the destination when both are ends, else to the enclosing operator.
void Graph::Attribute(int64_t parent) {
  Edge& e = edges_.back();
  const Node& src = nodes_[e.from];
  const Node& dst = nodes_[e.to];
  if (e.type == CpEdge::kKernelKernelDelay || src.start)
    e.attributed = src.event;
  else if (!dst.start)
    e.attributed = dst.event;
  else
    e.attributed = parent;
}

// One CPU thread's events, sorted by start (longer first): the edges HTA's depth-first walk of
// its call stack adds.
void Graph::CallStackEdges(const std::vector<uint32_t>& thread,
                           const std::vector<int64_t>& parent) {
  uint32_t last = kNoNode, last_top = kNoNode;
  int64_t last_parent = -1;
  int depth = 0;
  auto enter = [&](size_t k) {
    auto s = start_.find(thread[k]);
    if (s == start_.end()) return;
    if (depth == 0 && last_top != kNoNode) AddEdge(last_top, s->second, CpEdge::kDependency);
    ++depth;
    if (last != kNoNode) {
      AddEdge(last, s->second, CpEdge::kOperator);
      Attribute(last_parent);
    }
    last = s->second;
    last_parent = parent[k];
  };
  auto exit = [&](size_t k) {
    auto s = end_node_.find(thread[k]);
    if (s == end_node_.end()) return;
    --depth;
    if (last != kNoNode) {
      AddEdge(last, s->second, CpEdge::kOperator, IsBlockingCall(m_.name_of(thread[k])));
      Attribute(last_parent);
    }
    if (depth == 0) {
      last = kNoNode;
      last_top = s->second;
    } else {
      last = s->second;
      last_parent = parent[k];
    }
  };
  std::vector<size_t> stack;
  for (size_t k = 0; k < thread.size(); ++k) {
    while (!stack.empty() && m_.end_ns(thread[stack.back()]) <= m_.ts_ns[thread[k]]) {
      exit(stack.back());
      stack.pop_back();
    }
    enter(k);
    stack.push_back(k);
  }
  while (!stack.empty()) {
    exit(stack.back());
    stack.pop_back();
  }
}

void Graph::CpuEdges() {
  std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>> threads;
  for (uint32_t e : cpu_) threads[{m_.pid_of(e), m_.tid_of(e)}].push_back(e);
  for (auto& [key, evs] : threads) {
    std::stable_sort(evs.begin(), evs.end(), [&](uint32_t a, uint32_t b) {
      return m_.ts_ns[a] != m_.ts_ns[b] ? m_.ts_ns[a] < m_.ts_ns[b] : m_.dur_ns[a] > m_.dur_ns[b];
    });
    std::vector<int64_t> parent(evs.size(), -1);
    std::vector<size_t> stack;
    for (size_t k = 0; k < evs.size(); ++k) {
      while (!stack.empty() && m_.end_ns(evs[stack.back()]) <= m_.ts_ns[evs[k]]) stack.pop_back();
      if (!stack.empty()) parent[k] = evs[stack.back()];
      stack.push_back(k);
    }
    CallStackEdges(evs, parent);
  }
}

void Graph::IndexLaunches() {
  for (uint32_t e : gpu_)
    if (!IsSync(e))
      launched_[m_.stream_of(e)].emplace_back(m_.ts_ns[runtime_by_corr_.at(m_.correlation[e])],
                                              end_node_.at(e));
  for (auto& [stream, v] : launched_) std::stable_sort(v.begin(), v.end());
}

// HTA's event sync edges, added as HTA does only when the trace has cudaEventRecord calls. The
// event waited on was recorded after the last work launched on its stream before the record
// call (wait_on_cuda_event_record_corr_id), or, when the trace does not name the record, before
// the waiting call itself. "Event Sync" (cudaEventSynchronize): from that work's end to the
// end of the waiting call; "Stream Wait Event" (cudaStreamWaitEvent): to the start of the next
// work on the waiting stream, kept in `waits`. An edge that would go back in time is left out.
void Graph::EventSyncEdge(uint32_t e, uint32_t runtime, std::map<int64_t, uint32_t>* waits) {
  const trace::SyncWait* w = m_.SyncWaitOf(e);
  if (!records_events_ || w == nullptr) return;
  int64_t cutoff = m_.ts_ns[runtime];
  if (auto r = runtime_by_corr_.find(w->record_correlation); r != runtime_by_corr_.end())
    cutoff = m_.ts_ns[r->second];
  auto it = launched_.find(w->stream);
  if (it == launched_.end()) return;
  const auto& v = it->second;
  auto after = std::upper_bound(v.begin(), v.end(), cutoff,
                                [](int64_t t, const auto& p) { return t < p.first; });
  if (after == v.begin()) return;
  const uint32_t src = std::prev(after)->second;
  if (m_.name_of(e) == "Stream Wait Event") {
    (*waits)[m_.stream_of(e)] = src;
    return;
  }
  auto waiter = end_node_.find(runtime);
  if (waiter != end_node_.end() && nodes_[src].ts <= nodes_[waiter->second].ts)
    AddEdge(src, waiter->second, CpEdge::kSync);
}

// GPU work by start (syncs by end), per stream: the kernel's own edge, then a launch edge when
// the stream was idle at the launch call, else a kernel-kernel edge; a sync adds an edge from
// the stream's last work (every stream's for Context Sync) to the end of the waiting call, and
// an event sync from the work before the event's record (EventSyncEdge).
void Graph::GpuEdges() {
  auto key = [&](uint32_t e) { return IsSync(e) ? m_.end_ns(e) : m_.ts_ns[e]; };
  std::stable_sort(gpu_.begin(), gpu_.end(),
                   [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  IndexLaunches();
  std::map<int64_t, uint32_t> last;   // stream -> end node of its last work
  std::map<int64_t, uint32_t> waits;  // stream -> what its next work waits for (an event)
  for (uint32_t e : gpu_) {
    const uint32_t runtime = runtime_by_corr_.at(m_.correlation[e]);
    if (IsSync(e) && (m_.name_of(e) == "Stream Wait Event" || m_.name_of(e) == "Event Sync")) {
      EventSyncEdge(e, runtime, &waits);
      continue;
    }
    if (IsSync(e)) {
      auto waiter = end_node_.find(runtime);
      if (waiter == end_node_.end()) continue;
      const std::string& n = m_.name_of(e);
      if (n == "Context Sync") {
        for (const auto& [stream, node] : last) AddEdge(node, waiter->second, CpEdge::kSync);
      } else if (n == "Stream Sync") {
        auto it = last.find(m_.stream_of(e));
        if (it != last.end()) AddEdge(it->second, waiter->second, CpEdge::kSync);
      }
      continue;
    }
    const uint32_t s = start_.at(e), t = end_node_.at(e);
    int64_t synced = INT64_MIN;  // the end of the work this kernel waits for (Stream Wait Event)
    if (auto w = waits.find(m_.stream_of(e)); w != waits.end()) {
      if (nodes_[w->second].ts <= nodes_[s].ts) {
        AddEdge(w->second, s, CpEdge::kSync);
        synced = nodes_[w->second].ts;
      }
      waits.erase(w);
    }
    AddEdge(s, t, CpEdge::kOperator);
    Attribute(-1);
    // As HTA: the launch (or the stream's previous work) is a way in only when the waited-for
    // work ended before it; else the sync edge is the kernel's only way in.
    auto prev = last.find(m_.stream_of(e));
    const bool idle = prev == last.end() || nodes_[prev->second].ts < m_.ts_ns[runtime];
    if (idle && synced < m_.ts_ns[runtime]) {
      AddEdge(start_.at(runtime), s, CpEdge::kLaunchDelay);
    } else if (!idle && synced < nodes_[prev->second].ts) {
      AddEdge(prev->second, s, CpEdge::kKernelKernelDelay);
      Attribute(-1);
    }
    last[m_.stream_of(e)] = t;
  }
}

Status Graph::Build() {
  SelectEvents();
  MakeNodes();
  CpuEdges();
  GpuEdges();
  return Status::Ok();
}

CpCategory Graph::CategoryOf(const Edge& e) const {
  switch (e.type) {
    case CpEdge::kKernelKernelDelay:
      return CpCategory::kGpuKernelKernelOverhead;
    case CpEdge::kLaunchDelay:
      return CpCategory::kGpuKernelLaunchOverhead;
    case CpEdge::kDependency:
    case CpEdge::kSync:
      return CpCategory::kNone;
    case CpEdge::kOperator:
      break;
  }
  if (e.attributed < 0) return CpCategory::kCpuBound;
  const auto ev = static_cast<size_t>(e.attributed);
  const std::string& n = m_.name_of(ev);
  if (m_.stream_of(ev) < 0)
    return IsDataLoaderOp(n) || IsDataLoad(ev) ? CpCategory::kDataLoading : CpCategory::kCpuBound;
  return IsCommunicationKernel(n) ? CpCategory::kGpuCommunicationBound
                                  : CpCategory::kGpuComputeBound;
}

StatusOr<CriticalPath> Graph::Longest(size_t top_events) const {
  const size_t n = nodes_.size();
  if (n == 0) return NotFound("no CPU operator or GPU work in the window");
  std::vector<std::vector<uint32_t>> out(n);
  std::vector<uint32_t> indegree(n, 0);
  for (uint32_t i = 0; i < edges_.size(); ++i) {
    out[edges_[i].from].push_back(i);
    ++indegree[edges_[i].to];
  }
  std::vector<uint32_t> order;
  for (uint32_t v = 0; v < n; ++v)
    if (indegree[v] == 0) order.push_back(v);
  for (size_t k = 0; k < order.size(); ++k)
    for (uint32_t ei : out[order[k]])
      if (--indegree[edges_[ei].to] == 0) order.push_back(edges_[ei].to);
  if (order.size() != n)
    return InvalidArgument(fmt::format(
        "the critical-path graph has a cycle ({} of {} nodes ordered)", order.size(), n));
  std::vector<int64_t> dist(n, 0);
  std::vector<int64_t> via(n, -1);  // the edge the longest path arrives by
  for (uint32_t u : order)
    for (uint32_t ei : out[u]) {
      const Edge& e = edges_[ei];
      if (dist[u] + e.weight > dist[e.to] || (via[e.to] < 0 && dist[u] + e.weight == 0)) {
        dist[e.to] = dist[u] + e.weight;
        via[e.to] = ei;
      }
    }
  uint32_t v = order.front();
  for (uint32_t u : order)
    if (dist[u] > dist[v]) v = u;
  CriticalPath p;
  p.length_ns = dist[v];
  std::map<int64_t, std::pair<int64_t, CpCategory>> by_event;
  p.nodes = 1;
  p.events.push_back(nodes_[v].event);
  while (via[v] >= 0) {
    const Edge& e = edges_[static_cast<size_t>(via[v])];
    CpCategory c = CategoryOf(e);
    p.category_ns[static_cast<int>(c)] += e.weight;
    p.edge_ns[static_cast<int>(e.type)] += e.weight;
    const Node &from = nodes_[e.from], &to = nodes_[e.to];
    p.steps.push_back({from.ts, to.ts, e.type, c, e.attributed, e.weight, e.from, e.to, from.event,
                       to.event, from.start, to.start});
    if (e.attributed >= 0 && e.weight > 0) {
      auto& slot = by_event[e.attributed];
      slot.first += e.weight;
      slot.second = c;
    }
    v = e.from;
    ++p.nodes;
    p.events.push_back(nodes_[v].event);
  }
  std::reverse(p.steps.begin(), p.steps.end());
  std::sort(p.events.begin(), p.events.end());
  p.events.erase(std::unique(p.events.begin(), p.events.end()), p.events.end());
  for (const auto& [ev, x] : by_event)
    p.top.push_back({static_cast<uint32_t>(ev), x.first, x.second});
  std::stable_sort(p.top.begin(), p.top.end(),
                   [](const auto& a, const auto& b) { return a.ns > b.ns; });
  if (p.top.size() > top_events) p.top.resize(top_events);
  return p;
}

}  // namespace

const char* CpEdgeName(CpEdge e) {
  static const char* kNames[] = {
      "critical_path_operator", "critical_path_dependency", "critical_path_kernel_launch_delay",
      "critical_path_kernel_kernel_delay", "critical_path_sync_dependency"};
  return kNames[static_cast<int>(e)];
}

const char* CpCategoryName(CpCategory c) {
  static const char* kNames[] = {"cpu_bound",
                                 "gpu_compute_bound",
                                 "gpu_communication_bound",
                                 "gpu_kernel_kernel_overhead",
                                 "gpu_kernel_launch_overhead",
                                 "data_loading",
                                 ""};
  return kNames[static_cast<int>(c)];
}

StatusOr<std::pair<int64_t, int64_t>> FindAnnotationWindow(const trace::TraceModel& m,
                                                           const std::string& annotation,
                                                           int instance, int last) {
  if (annotation.empty()) {  // HTA's "": the whole trace
    if (m.size() == 0) return NotFound(fmt::format("{}: the trace has no events", m.path));
    int64_t begin = INT64_MAX, end = INT64_MIN;
    for (size_t i = 0; i < m.size(); ++i) {
      begin = std::min(begin, m.ts_ns[i]);
      end = std::max(end, m.end_ns(i));
    }
    return std::pair{begin, end};
  }
  std::vector<std::pair<int64_t, int64_t>> found;
  for (size_t i = 0; i < m.size(); ++i)
    if (m.name_of(i).find(annotation) != std::string::npos)
      found.push_back({m.ts_ns[i], m.end_ns(i)});
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (last < 0) last = instance;
  if (instance < 0 || last < instance || static_cast<size_t>(last) >= found.size())
    return NotFound(fmt::format(
        "{}: {} ranges named like \"{}\"; instance {} asked for", m.path, found.size(), annotation,
        last == instance ? fmt::format("{}", instance) : fmt::format("{}-{}", instance, last)));
  std::pair<int64_t, int64_t> w = found[static_cast<size_t>(instance)];
  for (int k = instance + 1; k <= last; ++k)
    w.second = std::max(w.second, found[static_cast<size_t>(k)].second);
  return w;
}

void Graph::AddOtherEdges(CriticalPath& p) const {
  std::set<std::pair<uint32_t, uint32_t>> on_path;
  for (const CriticalPath::Step& s : p.steps) on_path.insert({s.from_node, s.to_node});
  for (const Edge& e : edges_) {
    if (on_path.count({e.from, e.to}) || (e.type == CpEdge::kLaunchDelay && e.weight == 0))
      continue;
    const Node &from = nodes_[e.from], &to = nodes_[e.to];
    p.others.push_back({from.ts, to.ts, e.type, CategoryOf(e), e.attributed, e.weight, e.from, e.to,
                        from.event, to.event, from.start, to.start});
  }
}

StatusOr<CriticalPath> ComputeCriticalPath(const trace::TraceModel& m, int64_t begin_ns,
                                           int64_t end_ns, const CpOptions& o) {
  Graph g(m, begin_ns, end_ns);
  TRAINPROF_RETURN_IF_ERROR(g.SetDataLoad(o.data_load));
  TRAINPROF_RETURN_IF_ERROR(g.Build());
  TRAINPROF_ASSIGN_OR_RETURN(CriticalPath p, g.Longest(o.top_events));
  if (o.all_edges) g.AddOtherEdges(p);
  return p;
}

}  // namespace trainprof::analysis
