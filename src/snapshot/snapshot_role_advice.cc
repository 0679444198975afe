// What memory by role tells a user to do, each answer with its figures and only where the
// snapshot holds the evidence; where it does not, what to record instead.
#include <fmt/format.h>

#include "snapshot/snapshot_section.h"

namespace trainprof::snapshot {

using detail::Bytes;
using detail::Dev;
using detail::Share;
using memory::Role;

namespace {

int64_t At(const DeviceMemory& d, Role r) { return d.roles.At(r); }

// ", the largest from <stack>", or nothing when the source has no stacks.
std::string Largest(const DeviceMemory& d, Role role) {
  const std::string stack = d.roles.LargestStack(role);
  return stack.empty() ? "" : ", the largest from " + stack;
}

void OptimizerAdvice(const DeviceMemory& d, std::vector<std::string>& out) {
  const int64_t o = At(d, Role::kOptimizerState), p = At(d, Role::kParameter);
  if (o > 0 && p > 0)
    out.push_back(Dev(d.device) + ": " + OptimizerStateAnswer(o, p, "at the peak"));
}

void ActivationAdvice(const DeviceMemory& d, std::vector<std::string>& out) {
  const int64_t a = At(d, Role::kActivation);
  if (Share(a, d.peak_allocated) < 10) return;
  out.push_back(fmt::format(
      "{}: activations kept for the backward are {} ({:.1f} % of the peak){}: activation "
      "checkpointing (torch.utils.checkpoint) of the blocks that make them keeps "
      "only their inputs; half the micro-batch would save about {}",
      Dev(d.device), Bytes(a), Share(a, d.peak_allocated), Largest(d, Role::kActivation),
      Bytes(a / 2)));
}

void TemporaryAdvice(const DeviceMemory& d, std::vector<std::string>& out) {
  const int64_t t = At(d, Role::kTemporary);
  if (Share(t, d.peak_allocated) < 10) return;
  out.push_back(fmt::format(
      "{}: temporaries (born and freed in one phase) are {} ({:.1f} % of the peak){}: the peak is "
      "that operation's working memory",
      Dev(d.device), Bytes(t), Share(t, d.peak_allocated), Largest(d, Role::kTemporary)));
}

void GradientAdvice(const DeviceMemory& d, std::vector<std::string>& out) {
  if (d.roles.gradients_into_forward > 0)
    out.push_back(Dev(d.device) + ": " + GradientsKeptAnswer(d.roles.gradients_into_forward));
}

int64_t ByRule(const DeviceMemory& d, uint8_t rule) { return d.roles.ByRule(rule); }

void LimitNotes(const DeviceMemory& d, std::vector<std::string>& out) {
  const int64_t unknown = At(d, Role::kUnknown) - ByRule(d, memory::kBeforeWithState);
  if (const int64_t mixed = ByRule(d, memory::kBeforeWithState); mixed > 0)
    out.push_back(fmt::format(
        "{}: the history began after the optimizer made its state: the {} resident before it "
        "hold the weights and the optimizer's state together. Record from the start "
        "(torch.cuda.memory._record_memory_history before the first optimizer.step()) to tell "
        "them apart",
        Dev(d.device), Bytes(mixed)));
  if (d.starts_late && ByRule(d, memory::kBeforeHistory) > 0)
    out.push_back(fmt::format(
        "{}: the history began after the model was built: the {} resident before it are "
        "counted as weights; had recording begun mid-training they would also hold gradients "
        "and optimizer state. Record from the start (torch.cuda.memory._record_memory_history "
        "before the model is built) to tell them apart",
        Dev(d.device), Bytes(ByRule(d, memory::kBeforeHistory))));
  if (Share(unknown, d.peak_allocated) >= 50)
    out.push_back(fmt::format(
        "{}: {} ({:.1f} % of the peak) has no role: record the history with stacks "
        "(_record_memory_history(stacks=\"all\")) and PyTorch 2.4 or later for the optimizer's "
        "annotations, or attach trainprof.torch in the training loop for exact roles",
        Dev(d.device), Bytes(unknown), Share(unknown, d.peak_allocated)));
}

}  // namespace

std::string OptimizerStateAnswer(int64_t state, int64_t weights, std::string_view when) {
  const double ratio = static_cast<double>(state) / static_cast<double>(weights);
  std::string text = fmt::format("optimizer state is {:.1f}x the weights {} ({} against {})", ratio,
                                 when, Bytes(state), Bytes(weights));
  if (ratio > 1.5)
    text += fmt::format(
        ", as AdamW's two fp32 moments per parameter are: an 8-bit optimizer "
        "(bitsandbytes AdamW8bit) would hold about {} (saving {}); sharding the state over 8 "
        "GPUs (ZeRO-1, FSDP) would hold {} per GPU",
        Bytes(state / 4), Bytes(state - state / 4), Bytes(state / 8));
  return text;
}

std::string GradientsKeptAnswer(int64_t bytes) {
  return fmt::format(
      "{} of gradients are still live when the next forward begins: "
      "optimizer.zero_grad(set_to_none=True) right after optimizer.step() frees them before the "
      "forward's activations are made",
      Bytes(bytes));
}

std::vector<std::string> RoleAdvice(const DeviceMemory& d) {
  std::vector<std::string> out;
  if (!d.roles.inferred || d.peak_allocated <= 0) return out;
  OptimizerAdvice(d, out);
  ActivationAdvice(d, out);
  TemporaryAdvice(d, out);
  GradientAdvice(d, out);
  LimitNotes(d, out);
  return out;
}

}  // namespace trainprof::snapshot
