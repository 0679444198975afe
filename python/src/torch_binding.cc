// trainprof._core.TorchCollector: what trainprof.torch (python/trainprof/torch.py) measures in a
// PyTorch loop — the operator calls of torch.profiler, CUDA memory per step, activation memory,
// the model summary — handed to the C++ core, which computes the tables and adds them to the
// Session's report at finish(), with the GPU sections of `trainprof analyze` for a CUDA trace.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/run/driver.h"
#include "operators/module_table.h"
#include "operators/operator_report.h"
#include "operators/role_report.h"
#include "operators/step_memory_report.h"
#include "python/src/bindings.h"
#include "session/extension.h"
#include "session/live.h"
#include "snapshot/run_snapshot.h"
#include "trace/inprocess/function_events.h"
#include "trace/inprocess/inprocess_reader.h"

namespace py = pybind11;

namespace trainprof::python {
namespace {

// name, shapes, begin_ns, end_ns, tid, cpu_net, cuda_net
using OpTuple = std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int64_t, int64_t>;
// name, type, depth, index, leaf, has_shapes, input_shape, output_shape, output_bytes, params,
// trainable, param_bytes
using ModuleTuple = std::tuple<std::string, std::string, int, int, bool, bool, std::vector<int64_t>,
                               std::vector<int64_t>, int64_t, int64_t, int64_t, int64_t>;

class TorchCollector : public session::Extension {
 public:
  explicit TorchCollector(Session& session) : options_(session.options()) {}

  void OnStep(int64_t) override {}
  bool Claims(std::string_view key) const override {
    return key == "memory.enabled" || key == "model_summary.enabled" || key == "snapshot.enabled";
  }

  void AddOps(const std::vector<OpTuple>& ops, int64_t first_step, int64_t end_step) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, shapes, b, e, tid, cpu, cuda] : ops)
      calls_.push_back({name, shapes, b, e, tid, cpu, cuda});
    window_ = {first_step, end_step};
    have_ops_ = true;
  }
  void AddCudaMemory(const torchlib::CudaMemoryStep& m) {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_.push_back(m);
  }
  void AddActivation(const torchlib::ActivationStep& a) {
    std::lock_guard<std::mutex> lock(mu_);
    activations_.push_back(a);
  }
  void AddRoleSample(torchlib::RoleSample r) {
    std::lock_guard<std::mutex> lock(mu_);
    role_samples_.push_back(std::move(r));
  }
  void SetRoleModules(std::vector<torchlib::RoleModule> modules) {
    std::lock_guard<std::mutex> lock(mu_);
    role_modules_ = std::move(modules);
  }
  void SetRoleAutocast(std::string dtype, int64_t fp32_weight_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    role_context_.autocast_dtype = std::move(dtype);
    role_context_.fp32_weight_bytes = fp32_weight_bytes;
  }
  void SetModelSummary(const std::string& type, const std::vector<ModuleTuple>& mods,
                       int64_t input_bytes, const std::vector<std::string>& notes) {
    torchlib::ModelSummary s;
    s.model_type = type;
    s.input_bytes = input_bytes;
    s.notes = notes;
    for (const auto& [name, ty, depth, index, leaf, has, in, out, ob, p, t, pb] : mods) {
      torchlib::ModuleInfo m;
      std::tie(m.name, m.type, m.depth, m.index, m.leaf, m.has_shapes) =
          std::tie(name, ty, depth, index, leaf, has);
      std::tie(m.input_shape, m.output_shape, m.output_bytes) = std::tie(in, out, ob);
      std::tie(m.params, m.trainable, m.param_bytes) = std::tie(p, t, pb);
      s.modules.push_back(std::move(m));
    }
    torchlib::FinishTotals(s);
    std::lock_guard<std::mutex> lock(mu_);
    summary_ = std::move(s);
  }
  // `name` must be registered (base/diagnostics.h), which gives its severity: anything else is
  // a ValueError, so Python cannot emit a diagnostic the registry does not describe.
  void AddLine(const std::string& name, const std::string& text) {
    const std::optional<base::DiagnosticId> id = base::FindDiagnosticId(name);
    if (!id) throw py::value_error("not a registered diagnostic: " + name);
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back({*id, 1, text});
  }
  void SetSnapshotFile(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    snapshots_.history_file = path;
  }
  void SetOom(const snapshot::OomNotice& oom) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!snapshots_.oom) snapshots_.oom = oom;  // the first one: later ones follow from it
  }
  void SetTrace(const std::string& path, int64_t first_step, int64_t end_step) {
    std::lock_guard<std::mutex> lock(mu_);
    trace_ = path;
    window_ = {first_step, end_step};
  }

  Status OnFinish(session::FinishContext& ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    report::Report& r = ctx.report;
    Status st = Status::Ok();
    if (!trace_.empty() || have_ops_) st = AddOperators(ctx);
    torchlib::AddCudaMemorySection(cuda_, r);
    torchlib::AddActivationSection(activations_, r);
    // The activation answer names the modules of the step that saved most.
    const auto most = std::ranges::max_element(activations_, {}, &torchlib::ActivationStep::bytes);
    if (most != activations_.end()) role_context_.activation_modules = most->by_module;
    torchlib::AddRoleSection(role_samples_, role_modules_, r, role_context_);
    snapshot::AddRunSnapshots(snapshots_, r);
    if (summary_) {
      Status s = torchlib::AddModelSummary(*summary_, options_.model_summary.depth, ctx.run_dir, r);
      if (st.ok()) st = s;
    }
    for (report::Diagnostic& d : lines_) r.diagnostics.push_back(std::move(d));
    lines_.clear();
    return st;
  }

 private:
  // One operator table and the views of analyze, from the torch.profiler trace when torch has
  // Kineto, else from its events (the legacy trace has neither shapes nor memory).
  Status AddOperators(session::FinishContext& ctx) {
    torchlib::OperatorReportInput in{window_, options_.memory,
                                     static_cast<int64_t>(ctx.steps.size())};
    in.gross_memory = false;  // torch.profiler gives net bytes only
    in.cuda_memory = !cuda_.empty();
    if (trace_.empty()) return AddEventSections(ctx, in);
    analysis::RunInputs files;
    files.files = {trace_};
    TRAINPROF_ASSIGN_OR_RETURN(const analysis::LoadedRun run,
                               analysis::LoadRun(files, torchlib::RecordingRequest(), {}));
    in.notes.push_back(fmt::format("From the torch.profiler trace {}.", trace_));
    in.annotation_rows = true;  // record_function ranges and ProfilerStep*, as torch's table
    if (!torchlib::AddRecordingSections(run, in, trace_, "torch.profiler trace: ", ctx.report)) {
      ctx.report.diagnostics.push_back(
          {report::DiagnosticId::kTorchTraceWithoutGpu, 1,
           fmt::format("{}: no GPU activity in the torch.profiler trace, so no GPU or HTA "
                       "sections (they need a CUDA run with Kineto)",
                       trace_)});
    }
    return Status::Ok();
  }

  Status AddEventSections(session::FinishContext& ctx, torchlib::OperatorReportInput& in) {
    TRAINPROF_ASSIGN_OR_RETURN(const torchlib::OpData data,
                               trace::OpDataOfFunctionEvents(calls_, window_.first));
    std::vector<trace::TraceModel> models;
    models.push_back(trace::ReadInProcess({.label = ctx.run_dir, .ops = &data}));
    in.notes.push_back(
        "From torch.profiler's events (torch without Kineto, whose trace has neither shapes nor "
        "memory): times as it measured them, in whole microseconds; memory columns are net "
        "bytes (allocated minus freed while each operator ran), which is all torch gives, so "
        "there is no memory view of live blocks.");
    in.memory_view = false;
    const analysis::LoadedRun run =
        analysis::AnalyzeModels(std::move(models), torchlib::RecordingRequest());
    torchlib::AddRecordingSections(run, in, ctx.run_dir, "torch.profiler events: ", ctx.report);
    return Status::Ok();
  }

  std::mutex mu_;
  Options options_;
  std::vector<trace::FunctionEvent> calls_;
  torchlib::StepRange window_;
  bool have_ops_ = false;
  std::vector<torchlib::CudaMemoryStep> cuda_;
  std::vector<torchlib::ActivationStep> activations_;
  std::vector<torchlib::RoleSample> role_samples_;
  std::vector<torchlib::RoleModule> role_modules_;
  torchlib::RoleContext role_context_;
  std::optional<torchlib::ModelSummary> summary_;
  std::vector<report::Diagnostic> lines_;
  std::string trace_;
  snapshot::RunSnapshots snapshots_;
};

}  // namespace

void AddTorchBinding(py::module_& m) {
  py::class_<TorchCollector, std::shared_ptr<TorchCollector>>(m, "TorchCollector")
      .def(py::init([](py::handle session) {
             auto c = std::make_shared<TorchCollector>(CoreSession(session));
             ThrowIfError(session::AttachExtension(CoreSession(session), c), false);
             return c;
           }),
           py::arg("session"))
      .def("add_ops", &TorchCollector::AddOps, py::arg("ops"), py::arg("first_step"),
           py::arg("end_step"))
      .def(
          "add_cuda_memory",
          [](TorchCollector& c, int64_t step, int64_t a, int64_t ap, int64_t r, int64_t rp,
             int64_t ac, int64_t acp, int64_t retries, int64_t ooms) {
            c.AddCudaMemory({step, a, ap, r, rp, ac, acp, retries, ooms});
          },
          py::arg("step"), py::arg("allocated"), py::arg("allocated_peak"), py::arg("reserved"),
          py::arg("reserved_peak"), py::arg("active"), py::arg("active_peak"),
          py::arg("alloc_retries"), py::arg("ooms"))
      .def(
          "add_activation",
          [](TorchCollector& c, int64_t step, int64_t bytes, int64_t tensors,
             const std::vector<std::pair<std::string, int64_t>>& by_module) {
            c.AddActivation({step, bytes, tensors, by_module});
          },
          py::arg("step"), py::arg("bytes"), py::arg("tensors"), py::arg("by_module"))
      .def(
          "add_role_sample",
          [](TorchCollector& c, int64_t step, const std::string& at, int64_t parameter,
             int64_t gradient, std::optional<int64_t> state, std::optional<int64_t> activation,
             std::optional<int64_t> input, std::optional<int64_t> allocated) {
            c.AddRoleSample({step, at, parameter, gradient, state, activation, input, allocated});
          },
          py::arg("step"), py::arg("at"), py::arg("parameter"), py::arg("gradient"),
          py::arg("optimizer_state"), py::arg("activation"), py::arg("input"), py::arg("allocated"),
          "Memory by role at one phase boundary; None: not measured there.")
      .def(
          "set_role_modules",
          [](TorchCollector& c,
             const std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>>& rows) {
            std::vector<torchlib::RoleModule> modules;
            for (const auto& [name, p, g, o] : rows) modules.push_back({name, p, g, o});
            c.SetRoleModules(std::move(modules));
          },
          py::arg("modules"), "(module, parameter, gradient, optimizer state) bytes.")
      .def(
          "set_role_autocast",
          [](TorchCollector& c, const std::string& dtype, int64_t fp32_weight_bytes) {
            c.SetRoleAutocast(dtype, fp32_weight_bytes);
          },
          py::arg("dtype"), py::arg("fp32_weight_bytes"),
          "The model's forward ran under autocast to dtype with these float32 weights.")
      .def(
          "set_live_roles",
          [](TorchCollector&, int64_t step, int64_t parameter, int64_t gradient,
             std::optional<int64_t> state, std::optional<int64_t> allocated) {
            session::SetLiveRoles(torchlib::LiveFiguresOf(
                {step, "end of step", parameter, gradient, state, {}, {}, allocated}));
          },
          py::arg("step"), py::arg("parameter"), py::arg("gradient"), py::arg("optimizer_state"),
          py::arg("allocated"), "Memory by role at the end of a step, for the live view.")
      .def("set_model_summary", &TorchCollector::SetModelSummary, py::arg("model_type"),
           py::arg("modules"), py::arg("input_bytes"), py::arg("notes"))
      .def("add_line", &TorchCollector::AddLine, py::arg("name"), py::arg("text"))
      .def("add_snapshot_file", &TorchCollector::SetSnapshotFile, py::arg("path"),
           "The snapshot dumped after the recorded steps, analysed into the report.")
      .def(
          "add_oom",
          [](TorchCollector& c, int64_t device, int64_t requested, int64_t device_allocated,
             int64_t device_free, const std::string& file) {
            c.SetOom({device, requested, device_allocated, device_free, file});
          },
          py::arg("device"), py::arg("requested"), py::arg("device_allocated"),
          py::arg("device_free"), py::arg("file"),
          "An out-of-memory error and the snapshot written then, analysed into the report.")
      .def("set_trace", &TorchCollector::SetTrace, py::arg("path"), py::arg("first_step") = 0,
           py::arg("end_step") = 0,
           "The torch.profiler trace of steps [first_step, end_step) (0, 0: unknown), whose "
           "operator table and analyze sections join the report.");
  m.def(
      "torch_options",
      [](py::handle session) {
        const Options& o = CoreSession(session).options();
        py::dict d = OptionKeys(o, {"memory", "model_summary", "snapshot", "live"});
        d["live.on"] = session::LiveViewOn(o);  // computed from live.mode and the outputs
        return d;
      },
      py::arg("session"),
      "The memory.*, model_summary.* and snapshot.* keys of a Session, and whether its live view "
      "runs (live.on) at which interval.");
}

}  // namespace trainprof::python
