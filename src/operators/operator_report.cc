#include "operators/operator_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "analysis/operator_table.h"
#include "operators/activation_steps.h"

namespace trainprof::torchlib {
namespace {

using report::Unit;

std::string StepsText(StepRange s) {
  if (s.end <= s.first) return "the trace's steps";
  return s.end - s.first == 1 ? fmt::format("step {}", s.first)
                              : fmt::format("steps {}-{}", s.first, s.end - 1);
}

void AddScheduleDiagnostic(const OperatorReportInput& in, report::Report& report) {
  if (in.steps_in_run >= in.steps.end) return;
  const int64_t got = std::max<int64_t>(0, in.steps_in_run - in.steps.first);
  report.diagnostics.push_back(
      {report::DiagnosticId::kMemoryScheduleNotReached, 1,
       fmt::format("the operator observer needs memory.warmup + memory.steps = {} steps, but the "
                   "run had {}: {}; run at least {} steps or lower memory.warmup/memory.steps",
                   in.steps.end, in.steps_in_run,
                   got == 0
                       ? std::string("no step was recorded")
                       : fmt::format("only {} of {} steps were recorded", got, in.options.steps),
                   in.steps.end)});
}

void AddRecordingDiagnostics(const OpData& d, report::Report& report) {
  if (d.dropped_ops + d.dropped_mem > 0) {
    report.diagnostics.push_back(
        {report::DiagnosticId::kDroppedOperatorEvents,
         static_cast<int64_t>(d.dropped_ops + d.dropped_mem),
         fmt::format("{} operator calls and {} allocator reports were dropped: a thread's buffer "
                     "was full (buffer.events_per_thread); raise it or lower memory.steps",
                     d.dropped_ops, d.dropped_mem)});
  }
  if (d.too_deep > 0) {
    report.diagnostics.push_back(
        {report::DiagnosticId::kOperatorsNestedTooDeep, static_cast<int64_t>(d.too_deep),
         fmt::format("{} operator calls nested more than 128 deep were not timed", d.too_deep)});
  }
}

void AddActivationTable(const OpData& d, StepRange steps, report::Section& s) {
  const std::vector<StepActivation> activations = StepActivations(d, steps);
  if (activations.empty()) return;
  report::Table& t = s.AddTable("activation_memory", "Activation memory per training step",
                                {{"step", "Step", Unit::kCount},
                                 {"device", "Device", Unit::kText},
                                 {"bytes", "Activation memory", Unit::kBytes}});
  for (const StepActivation& a : activations)
    t.rows.push_back({a.step, std::string(a.device_class == kCuda ? "cuda" : "cpu"), a.bytes});
  t.notes.push_back(
      "Bytes allocated during the step and still allocated when its backward pass began: the "
      "tensors saved for backward, plus the forward's outputs, the loss and its gradient seed "
      "(LibTorch 1.13 has no C++ saved-tensor hooks to count saved tensors one by one).");
}

// memory.extra_plots: every allocator report of the recorded steps, with its address.
void AddAllocatorEvents(const OpData& d, StepRange steps, report::Section& s) {
  report::Table& t = s.AddTable("memory_events", "Allocator events",
                                {{"time_s", "Time", Unit::kSeconds},
                                 {"step", "Step", Unit::kCount},
                                 {"device", "Device", Unit::kText},
                                 {"bytes", "Bytes (+alloc / -free)", Unit::kBytes},
                                 {"address", "Address", Unit::kText},
                                 {"operator", "Operator", Unit::kText}},
                                report::TableKind::kDetail);
  for (const MemEvent& m : d.mem) {
    if (!steps.Contains(m.step)) continue;
    t.rows.push_back({static_cast<double>(m.t_ns) * 1e-9, m.step,
                      DeviceName(m.device_type, m.device_index), m.bytes,
                      fmt::format("0x{:x}", m.ptr),
                      m.op == MemEvent::kNoOp ? std::string() : d.names[m.op]});
  }
}

}  // namespace

void AddOperatorSection(const trace::TraceModel& m, const OperatorReportInput& in,
                        report::Report& report) {
  const Options::Memory& o = in.options;
  report::Section& s =
      report.AddSection("operators", "Operator table (torch.profiler's key_averages)");
  s.notes.push_back(fmt::format(
      "Recorded {} (memory.warmup = {}, memory.steps = {}); CPU times of the calling threads, "
      "as PyTorch's profiler measures them.",
      StepsText(in.steps), o.warmup, o.steps));
  s.notes.insert(s.notes.end(), in.notes.begin(), in.notes.end());
  AddScheduleDiagnostic(in, report);
  if (in.data != nullptr) AddRecordingDiagnostics(*in.data, report);
  analysis::AddOperatorTables(m, in.counted,
                              {.by_shapes = o.group_by_input_shape,
                               .sort_by = o.sort_by,
                               .row_limit = o.row_limit,
                               .gross_memory = in.gross_memory,
                               .cuda_memory = in.cuda_memory,
                               .annotation_rows = in.annotation_rows},
                              s);
  if (in.data == nullptr) return;
  AddActivationTable(*in.data, in.steps, s);
  if (o.extra_plots && !in.data->mem.empty()) AddAllocatorEvents(*in.data, in.steps, s);
}

analysis::AnalyzeRequest RecordingRequest() {
  analysis::AnalyzeRequest req;
  req.steps = "all";
  req.threads = 1;
  return req;
}

bool AddRecordingSections(const analysis::LoadedRun& run, const OperatorReportInput& in,
                          const std::string& label, const std::string& title_prefix,
                          report::Report& report) {
  if (run.models.empty()) return false;
  AddOperatorSection(run.models[0], in, report);
  const size_t ops = report.sections.size() - 1;
  std::vector<std::string> skip;
  if (!in.memory_view) skip.push_back("memory");
  const bool gpu =
      analysis::AdoptTraceSections(run, RecordingRequest(), label, title_prefix, report, skip);
  for (size_t i = ops + 1; i < report.sections.size(); ++i) {
    const std::string& id = report.sections[i].id;
    if (id == "memory" || id == "trace_memory") {
      report.sections[ops].notes.push_back(
          fmt::format("The memory of these steps: the {} section.", id));
    }
  }
  return gpu;
}

void AddOperatorTrace(const OpData& d, StepRange steps, session::TraceInput& trace) {
  session::ExtraEvents x;
  x.cat = "cpu_op";
  x.names = d.names;
  std::vector<uint32_t> args_of_shapes(d.shapes.size(), session::ExtraEvents::kNoArgs);
  for (const OpEvent& e : d.ops) {
    if (!steps.Contains(e.step)) continue;
    uint32_t args = session::ExtraEvents::kNoArgs;
    if (e.shapes != 0) {
      uint32_t& a = args_of_shapes[e.shapes];
      if (a == session::ExtraEvents::kNoArgs) {
        a = static_cast<uint32_t>(x.args.size());
        x.args.push_back(fmt::format("\"Input Dims\":{}", d.shapes[e.shapes]));
      }
      args = a;
    }
    x.events.push_back({e.name, args, e.tid, e.begin_ns, e.dur_ns, e.step});
  }
  if (!x.events.empty()) trace.extra.push_back(std::move(x));

  std::map<std::pair<int16_t, int16_t>, std::pair<trace::CounterTrack, trace::CounterTrack>> tracks;
  for (const MemEvent& mem : d.mem) {
    if (!steps.Contains(mem.step)) continue;
    auto& [alloc, reserved] = tracks[{mem.device_type, mem.device_index}];
    alloc.t_ns.push_back(mem.t_ns);
    alloc.values.push_back(static_cast<double>(mem.total_allocated));
    reserved.t_ns.push_back(mem.t_ns);
    reserved.values.push_back(static_cast<double>(mem.total_reserved));
  }
  for (auto& [dev, pair] : tracks) {
    const std::string name = DeviceName(dev.first, dev.second);
    pair.first.name = fmt::format("Memory allocated ({}) [bytes]", name);
    trace.counters.push_back(std::move(pair.first));
    if (dev.first != 0) {  // the CPU allocator reserves nothing
      pair.second.name = fmt::format("Memory reserved ({}) [bytes]", name);
      trace.counters.push_back(std::move(pair.second));
    }
  }
}

}  // namespace trainprof::torchlib
