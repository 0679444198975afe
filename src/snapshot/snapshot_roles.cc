// Memory by role for a snapshot: where each stack's blocks were made (the autograd thread, a
// workspace, a module's construction, an optimizer's step), the step's phases from the
// annotations and the log, and the roles memory/roles.h infers from them.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_internal.h"

namespace trainprof::snapshot {
namespace {

bool Has(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// A Python frame that means a module is being built or moved, not run.
bool BuildsModel(std::string_view name, std::string_view file) {
  return name == "_apply" || name == "reset_parameters" || name == "to_empty" ||
         (name == "__init__" && !Has(file, "/optim/"));
}

bool RunsModel(std::string_view name) {
  return name == "_call_impl" || name == "_wrapped_call_impl" || name == "forward" ||
         name == "backward" || name == "step";
}

constexpr size_t kTopStacks = 3;

// An annotation that names a phase: PyTorch's optimizer ranges, a user's "forward" / "backward"
// (any case, with or without "## ... ##" around it).
std::optional<memory::Phase> PhaseOf(std::string_view name) {
  if (const auto phase = memory::OptimizerPhaseOf(name)) return phase;
  std::string word;
  for (char c : name)
    if (std::isalpha(static_cast<unsigned char>(c)))
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (word == "forward") return memory::Phase::kForward;
  if (word == "backward") return memory::Phase::kBackward;
  if (word == "optimizer" || word == "optimizerstep") return memory::Phase::kOptimizer;
  return std::nullopt;
}

// The most gradient bytes live at the start of a forward (times from t0) that follows a backward:
// bytes made before it less bytes freed by then, from the gradients' sorted times.
int64_t GradientsIntoForward(const memory::AllocationLog& log, int64_t device,
                             const std::vector<memory::PhaseSpan>& phases, int64_t t0) {
  std::vector<std::pair<int64_t, int64_t>> made, freed;  // time, bytes
  for (const memory::Block& b : log.blocks) {
    if (b.device != device || b.role != memory::Role::kGradient) continue;
    made.emplace_back(b.alloc_time, b.bytes);
    if (b.free_seq != memory::kNever) freed.emplace_back(b.free_time, b.bytes);
  }
  std::ranges::sort(made);
  std::ranges::sort(freed);
  auto prefix = [](const std::vector<std::pair<int64_t, int64_t>>& v) {
    std::vector<int64_t> out(v.size() + 1, 0);
    for (size_t i = 0; i < v.size(); ++i) out[i + 1] = out[i] + v[i].second;
    return out;
  };
  const std::vector<int64_t> made_sum = prefix(made), freed_sum = prefix(freed);
  auto bytes_before = [&](int64_t t) {  // made before t, less freed by t
    const auto m = std::ranges::lower_bound(made, std::pair{t, int64_t{0}}) - made.begin();
    const auto f = std::ranges::upper_bound(freed, std::pair{t, memory::kNever}) - freed.begin();
    return made_sum[static_cast<size_t>(m)] - freed_sum[static_cast<size_t>(f)];
  };
  int64_t most = 0;
  bool after_backward = false;
  for (const memory::PhaseSpan& p : phases) {
    after_backward |= p.phase == memory::Phase::kBackward;
    if (p.phase != memory::Phase::kForward || !after_backward) continue;
    const int64_t t = p.start + t0;
    most = std::max(most, bytes_before(t));
  }
  return most;
}

}  // namespace

uint8_t OriginOf(const SnapshotModel& m, uint32_t stack, bool python_stacks) {
  // Python stacks recorded, yet none here: made where no Python runs, autograd's thread.
  if (stack == 0 || stack >= m.stacks()) return python_stacks ? memory::kOnAutogradThread : 0;
  bool python = false, autograd = false, workspace = false, builds = false, runs = false,
       optimizer = false;
  for (const uint32_t* f = m.StackBegin(stack); f != m.StackEnd(stack); ++f) {
    const Frame& fr = m.frames[*f];
    const std::string_view name = m.Str(fr.name), file = m.Str(fr.filename);
    if (fr.python) {
      python = true;
      builds |= BuildsModel(name, file);
      runs |= RunsModel(name);
      optimizer |= name == "step" && Has(file, "optim");
    } else {
      autograd |= Has(name, "autograd::Engine") || Has(name, "AccumulateGrad");
      workspace |= Has(name, "Workspace");
    }
  }
  uint8_t o = 0;
  if (!python && autograd) o |= memory::kOnAutogradThread;
  if (workspace) o |= memory::kWorkspace;
  if (builds && !runs) o |= memory::kMadeInModelBuild;
  if (optimizer) o |= memory::kOptimizerStep;
  return o;
}

void Roles(const SnapshotModel& m, Replay& r, size_t peak, const SnapshotOptions& o, int64_t t0,
           DeviceMemory& d) {
  if (d.curve.empty()) return;
  std::vector<memory::PhaseSpan> annotated;
  for (const Interval& iv : Intervals(m, d.device, d.curve.back().time_us)) {
    if (const auto phase = PhaseOf(m.Str(iv.name))) annotated.push_back({*phase, iv.start, iv.end});
  }
  RoleMemory& out = d.roles;
  out.phases = memory::StepPhases(r.log, d.device, std::move(annotated));
  memory::InferRoles(r.log, d.device, out.phases);
  out.inferred = true;
  for (memory::PhaseSpan& p : out.phases) p.start -= t0, p.end -= t0;
  for (memory::RolePoint& p :
       memory::RoleTimeline(r.log, d.device, static_cast<int64_t>(peak), 400))
    if (InWindow(p.time, o, t0)) out.timeline.push_back({p.time - t0, p.bytes});
  out.gradients_into_forward = GradientsIntoForward(r.log, d.device, out.phases, t0);
  if (peak >= d.curve.size()) return;
  const auto seq = static_cast<int64_t>(peak);
  out.at_peak = memory::RolesAt(r.log, d.device, seq);
  out.rules = memory::RulesAt(r.log, d.device, seq);
  Labels labels(m);
  for (int role = 0; role < memory::kRoles; ++role) {
    auto of_role = [role](const memory::Block& b) { return static_cast<int>(b.role) == role; };
    const auto rows = memory::LiveAt(
        r.log, d.device, seq, [](const memory::Block& b) { return b.stack; }, of_role);
    for (size_t i = 0; i < rows.size() && i < kTopStacks; ++i) {
      const std::string& label =
          rows[i].key == memory::kNoKey ? std::string(kBeforeHistoryLabel) : labels.Of(rows[i].key);
      out.stacks.push_back(
          {static_cast<memory::Role>(role), {label, rows[i].bytes, rows[i].blocks, 0}});
    }
  }
}

}  // namespace trainprof::snapshot
