#include "operators/role_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "snapshot/snapshot_section.h"

namespace trainprof::torchlib {
namespace {

using report::Unit;
using snapshot::detail::Bytes;

constexpr size_t kTopModules = 20;
constexpr const char* kForward = "end of forward";

int64_t Known(const RoleSample& s) {
  return s.parameter + s.gradient + s.optimizer_state.value_or(0) + s.activation.value_or(0) +
         s.input.value_or(0);
}

std::optional<int64_t> Other(const RoleSample& s) {
  if (!s.allocated) return std::nullopt;
  return std::max<int64_t>(*s.allocated - Known(s), 0);
}

report::Value Cell(const std::optional<int64_t>& v) {
  return v ? report::Value(*v) : report::Value();
}

// The largest figure over the samples, absent when no sample has it.
template <typename Get>
std::optional<int64_t> Largest(const std::vector<RoleSample>& samples, Get get) {
  std::optional<int64_t> m;
  for (const RoleSample& s : samples)
    if (const std::optional<int64_t> v = get(s)) m = std::max(m.value_or(0), *v);
  return m;
}

void AddMetrics(const std::vector<RoleSample>& samples, report::Section& s) {
  const struct {
    const char* key;
    const char* title;
    std::optional<int64_t> v;
  } metrics[] = {
      {"parameter_bytes", "Parameters (and buffers)",
       Largest(samples, [](const RoleSample& r) { return std::optional(r.parameter); })},
      {"gradient_bytes", "Gradients",
       Largest(samples, [](const RoleSample& r) { return std::optional(r.gradient); })},
      {"optimizer_state_bytes", "Optimizer state",
       Largest(samples, [](const RoleSample& r) { return r.optimizer_state; })},
      {"activation_bytes", "Activations (saved for backward)",
       Largest(samples, [](const RoleSample& r) { return r.activation; })},
      {"input_bytes", "Input", Largest(samples, [](const RoleSample& r) { return r.input; })},
      {"other_bytes", "Temporaries and other (allocator total less the rest)",
       Largest(samples, Other)},
  };
  for (const auto& m : metrics)
    if (m.v) s.AddMetric(m.key, m.title, *m.v, Unit::kBytes);
}

void AddSamples(const std::vector<RoleSample>& samples, report::Section& s) {
  report::Table& t = s.AddTable("role_samples", "Memory by role at each phase boundary",
                                {{"step", "Step", Unit::kCount},
                                 {"at", "At", Unit::kText},
                                 {"parameter_bytes", "Parameters", Unit::kBytes},
                                 {"gradient_bytes", "Gradients", Unit::kBytes},
                                 {"optimizer_state_bytes", "Optimizer state", Unit::kBytes},
                                 {"activation_bytes", "Activations", Unit::kBytes},
                                 {"input_bytes", "Input", Unit::kBytes},
                                 {"other_bytes", "Temporaries and other", Unit::kBytes},
                                 {"allocated_bytes", "Allocated", Unit::kBytes}},
                                report::TableKind::kSeries);
  for (const RoleSample& r : samples)
    t.rows.push_back({r.step, r.at, r.parameter, r.gradient, Cell(r.optimizer_state),
                      Cell(r.activation), Cell(r.input), Cell(Other(r)), Cell(r.allocated)});
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Memory by role at each phase boundary",
                      .values = {"parameter_bytes", "gradient_bytes", "optimizer_state_bytes",
                                 "activation_bytes", "input_bytes", "other_bytes"},
                      .limit = 0,
                      .horizontal = false,
                      .label_format = "step {step}: {at}"});
  t.notes.push_back(
      "Exact, by tensor identity, each storage once: parameters and buffers of the model, their "
      ".grad, the tensors in optimizer.state, the storages autograd saved for backward in this "
      "step so far, the tensors handed to the model's forward. An empty cell was not measured "
      "there (activations and input at the end of the forward only).");
  if (!Largest(samples, [](const RoleSample& r) { return r.allocated; }))
    t.notes.push_back(
        "No allocator total (a CPU run, or parameters on several GPUs): temporaries and other "
        "memory are not measured, which is not 0. On one CUDA device they are "
        "torch.cuda.memory_allocated() less the roles above.");
}

void AddModules(std::vector<RoleModule> modules, report::Section& s) {
  if (modules.empty()) return;
  auto total = [](const RoleModule& m) { return m.parameter + m.gradient + m.optimizer_state; };
  std::stable_sort(modules.begin(), modules.end(),
                   [&](const RoleModule& a, const RoleModule& b) { return total(a) > total(b); });
  report::Table& t =
      s.AddTable("role_modules", "Parameters, gradients and optimizer state by module",
                 {{"module", "Module", Unit::kText},
                  {"parameter_bytes", "Parameters", Unit::kBytes},
                  {"gradient_bytes", "Gradients", Unit::kBytes},
                  {"optimizer_state_bytes", "Optimizer state", Unit::kBytes},
                  {"total_bytes", "Total", Unit::kBytes}});
  RoleModule rest;
  for (size_t i = 0; i < modules.size(); ++i) {
    const RoleModule& m = modules[i];
    if (i < kTopModules) {
      t.rows.push_back({m.module, m.parameter, m.gradient, m.optimizer_state, total(m)});
      continue;
    }
    rest.parameter += m.parameter;
    rest.gradient += m.gradient;
    rest.optimizer_state += m.optimizer_state;
  }
  if (modules.size() > kTopModules)
    t.rows.push_back({fmt::format("({} more modules)", modules.size() - kTopModules),
                      rest.parameter, rest.gradient, rest.optimizer_state, total(rest)});
  t.notes.push_back(
      "After the last recorded optimizer.step(), by the module that owns each parameter (its "
      "dotted path); activations by module are in the activation_memory section.");
}

// "blocks.3 (12.0 MiB), blocks.2 (12.0 MiB), blocks.1 (12.0 MiB)", or "the blocks that make them
// (the activation_modules table)" without module figures.
std::string TopModules(const RoleContext& c) {
  if (c.activation_modules.empty())
    return "the blocks that make them (the activation_modules table)";
  std::string out;
  for (size_t i = 0; i < c.activation_modules.size() && i < 3; ++i)
    out += fmt::format("{}{} ({})", i ? ", " : "", c.activation_modules[i].first,
                       Bytes(c.activation_modules[i].second));
  return "the modules that save most: " + out;
}

void AddAnswers(const std::vector<RoleSample>& samples, const RoleContext& context,
                report::Section& s) {
  const int64_t weights =
      Largest(samples, [](const RoleSample& r) { return std::optional(r.parameter); }).value_or(0);
  const std::optional<int64_t> state =
      Largest(samples, [](const RoleSample& r) { return r.optimizer_state; });
  if (state && *state > 0 && weights > 0)
    s.findings.push_back({report::Severity::kInfo,
                          snapshot::OptimizerStateAnswer(*state, weights, "after its step")});
  const std::optional<int64_t> kept = Largest(samples, [](const RoleSample& r) {
    return r.at == kForward ? std::optional(r.gradient) : std::nullopt;
  });
  if (kept && *kept > 0)
    s.findings.push_back({report::Severity::kInfo, snapshot::GradientsKeptAnswer(*kept)});
  for (const RoleSample& r : samples) {
    if (r.at != kForward || !r.activation) continue;
    const double share = 100.0 * static_cast<double>(*r.activation) /
                         static_cast<double>(std::max<int64_t>(r.allocated.value_or(Known(r)), 1));
    if (share < 30) continue;
    s.findings.push_back(
        {report::Severity::kInfo,
         fmt::format("activations kept for the backward are {} ({:.1f} % of the memory at the end "
                     "of step {}'s forward): activation checkpointing (torch.utils.checkpoint) "
                     "of {} keeps only their inputs; half the micro-batch would save about {}",
                     Bytes(*r.activation), share, r.step, TopModules(context),
                     Bytes(*r.activation / 2))});
    break;
  }
}

void AddAutocastAnswer(const RoleContext& a, report::Section& s) {
  const std::string& dtype = a.autocast_dtype;
  if (dtype.empty() || dtype == "float32" || a.fp32_weight_bytes <= 0) return;
  s.findings.push_back(
      {report::Severity::kInfo,
       fmt::format("the forward ran under autocast to {} while {} of the weights are float32: "
                   "autocast casts a {} copy of each at every use. Weights stored in {} (FSDP's "
                   "MixedPrecision(param_dtype=torch.{}), or model.to(torch.{}) with an "
                   "optimizer that keeps float32 master weights) would hold {}",
                   dtype, Bytes(a.fp32_weight_bytes), dtype, dtype, dtype, dtype,
                   Bytes(a.fp32_weight_bytes / 2))});
}

}  // namespace

session::LiveRoleFigures LiveFiguresOf(const RoleSample& r) {
  session::LiveRoleFigures f{r.step, static_cast<double>(r.parameter),
                             static_cast<double>(r.gradient)};
  if (r.optimizer_state) f.optimizer_state = static_cast<double>(*r.optimizer_state);
  if (const std::optional<int64_t> other = Other(r)) f.other = static_cast<double>(*other);
  return f;
}

void AddRoleSection(const std::vector<RoleSample>& samples, std::vector<RoleModule> modules,
                    report::Report& report, const RoleContext& context) {
  if (samples.empty()) return;
  report::Section& s = report.AddSection("memory_by_role", "Memory by role (exact, in the loop)");
  AddMetrics(samples, s);
  AddSamples(samples, s);
  AddModules(std::move(modules), s);
  AddAnswers(samples, context, s);
  AddAutocastAnswer(context, s);
}

}  // namespace trainprof::torchlib
