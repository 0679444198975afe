#include "session/trace_export.h"

#include <fmt/format.h>

#include <unordered_map>

#include "base/text.h"
#include "trace/chrome_trace_writer.h"
#include "trainprof/version.h"

namespace trainprof::session {

Status WriteTrace(const TraceInput& in, const std::string& path) {
  trace::ChromeTraceWriter w;
  TRAINPROF_RETURN_IF_ERROR(w.Open(path));
  w.OtherData("producer", "trainprof " TRAINPROF_VERSION);
  w.OtherData("start_utc", base::UtcIso8601(in.start_unix_ns));
  w.ProcessName(in.pid, in.process_name);
  std::unordered_map<int64_t, bool> named;
  // Each track is named once: by its recorded thread name, else "thread <tid>".
  auto name_thread = [&](int64_t tid, const std::string& name) {
    if (named[tid]) return;
    w.ThreadName(in.pid, tid, name.empty() ? fmt::format("thread {}", tid) : name);
    named[tid] = true;
  };
  for (const TraceThread& t : in.threads) name_thread(t.tid, t.name);
  for (const record::StepMark& m : in.steps) {
    name_thread(m.tid, "");
    // Training steps are ProfilerStep#N, as Kineto names them, so `trainprof analyze` and the
    // tools that read Kineto traces count them as steps; validation steps are named apart.
    trace::NameId id = w.InternName(fmt::format(
        "{}#{}", m.stage == Stage::kTrain ? "ProfilerStep" : "ValidationStep", m.profiler_step));
    w.Complete(id, trace::kCatStep, m.begin_ns, m.end_ns - m.begin_ns, in.pid, m.tid,
               m.profiler_step);
  }
  std::unordered_map<const SourceLocation*, trace::NameId> names;
  for (const TraceThread& t : in.threads) {
    for (size_t i = 0; i < t.events.size(); ++i) {
      const record::TimedEvent& e = t.events[i];
      auto it = names.find(e.loc);
      if (it == names.end()) it = names.emplace(e.loc, w.InternName(e.loc->name)).first;
      w.Complete(it->second, trace::kCatScope, e.begin_ns, e.dur_ns, in.pid, t.tid, t.steps[i]);
    }
  }
  for (const ExtraEvents& x : in.extra) {
    const int64_t pid = x.pid == ExtraEvents::kSessionPid ? in.pid : x.pid;
    if (pid != in.pid && !x.process_name.empty()) w.ProcessName(pid, x.process_name);
    for (const auto& [tid, name] : x.thread_names) w.ThreadName(pid, tid, name);
    std::vector<trace::NameId> ids;
    ids.reserve(x.names.size());
    for (const std::string& n : x.names) ids.push_back(w.InternName(n));
    for (const ExtraEvents::Event& e : x.events) {
      if (pid == in.pid) name_thread(e.tid, "");
      w.Complete(ids[e.name], x.cat, e.begin_ns, e.dur_ns, pid, e.tid, e.step,
                 e.args == ExtraEvents::kNoArgs ? std::string_view() : x.args[e.args]);
    }
  }
  for (const FlowEnd& f : in.flows) {
    w.Flow(f.id, f.ts_ns, f.pid == ExtraEvents::kSessionPid ? in.pid : f.pid, f.tid, f.start);
  }
  if (!in.device_properties.empty()) w.TopLevel("deviceProperties", in.device_properties);
  for (const trace::CounterTrack& c : in.counters) {
    for (size_t i = 0; i < c.t_ns.size(); ++i) w.Counter(c.name, c.t_ns[i], in.pid, c.values[i]);
  }
  return w.Close();
}

}  // namespace trainprof::session
