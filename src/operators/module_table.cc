#include "operators/module_table.h"

#include <fmt/format.h>

#include <sstream>

#include "base/atomic_file.h"
#include "report/terminal.h"

namespace trainprof::torchlib {
namespace {

int64_t Product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < v.size(); ++i) p *= v[i];
  return p;
}

}  // namespace

// Linear counts per row of the output, so [B, T, F] inputs count B x T uses where torchinfo
// counts B.

void ComputeMultAdds(ModuleInfo& m) {
  if (!m.has_shapes || m.params == 0 || m.output_shape.empty()) return;
  const auto& out = m.output_shape;
  if (m.type.find("Conv") != std::string::npos) {
    m.mult_adds = m.params * out[0] * Product(out, 2, out.size());
  } else if (m.type == "Linear" || m.type == "Bilinear") {
    m.mult_adds = m.params * Product(out, 0, out.size() - 1);
  } else if (m.type.find("RNN") != std::string::npos || m.type.find("LSTM") != std::string::npos ||
             m.type.find("GRU") != std::string::npos) {
    m.mult_adds = m.params * Product(out, 0, 2);
  } else {
    m.mult_adds = m.params * out[0];
  }
}

int64_t FinishTotals(ModelSummary& s) {
  int64_t unseen = 0;
  for (size_t i = 0; i < s.modules.size(); ++i) {
    ModuleInfo& m = s.modules[i];
    ComputeMultAdds(m);
    s.total_params += m.params;
    s.trainable_params += m.trainable;
    s.param_bytes += m.param_bytes;
    s.total_mult_adds += m.mult_adds;
    if (m.leaf && m.has_shapes) s.forward_backward_bytes += 2 * m.output_bytes;
    if (i > 0 && m.leaf && !m.has_shapes) ++unseen;
  }
  return unseen;
}

namespace {

// Null (shown as "-") when the shape was not captured.
report::Value ShapeText(const ModuleInfo& m, const std::vector<int64_t>& shape) {
  if (!m.has_shapes || shape.empty()) return {};
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// torchinfo's layer label: "Cnn", "├─Conv2d: 1-1", "│    └─Linear: 2-3".
std::string LayerLabel(const std::vector<ModuleInfo>& mods, size_t i) {
  const ModuleInfo& m = mods[i];
  if (m.depth == 0) return m.type;
  // Is the module (or an ancestor at depth d) the last of its siblings?
  auto last_at = [&](size_t k, int depth) {
    for (size_t j = k + 1; j < mods.size() && mods[j].depth >= depth; ++j) {
      if (mods[j].depth == depth) return false;
    }
    return true;
  };
  std::string prefix;
  size_t k = i;
  std::vector<bool> last_of_level(m.depth + 1, false);
  for (int d = m.depth; d >= 1; --d) {
    while (mods[k].depth != d) --k;
    last_of_level[d] = last_at(k, d);
  }
  for (int d = 1; d < m.depth; ++d) prefix += last_of_level[d] ? "     " : "│    ";
  prefix += last_of_level[m.depth] ? "└─" : "├─";
  return fmt::format("{}{}: {}-{}", prefix, m.type, m.depth, m.index);
}

// The modules below the depth limit under s.modules[i] (at the limit): how many, and their
// parameters, so no parameter is in no row.
struct Hidden {
  int64_t modules = 0, params = 0, trainable = 0;
};
Hidden HiddenUnder(const ModelSummary& s, size_t i) {
  Hidden h;
  for (size_t j = i + 1; j < s.modules.size() && s.modules[j].depth > s.modules[i].depth; ++j) {
    ++h.modules;
    h.params += s.modules[j].params;
    h.trainable += s.modules[j].trainable;
  }
  return h;
}

std::string TrainableText(int64_t trainable, int64_t params) {
  return trainable == params ? "True" : trainable == 0 ? "False" : "Partial";
}

}  // namespace

void AddModelSummarySection(const ModelSummary& s, int64_t depth, report::Report& report) {
  using report::Unit;
  using report::Value;
  report::Section& sec = report.AddSection("model_summary", "Model summary");
  report::Table& t =
      sec.AddTable("model_summary", fmt::format("{} (depth {})", s.model_type, depth),
                   {{"layer", "Layer (type:depth-idx)", Unit::kText},
                    {"name", "Name", Unit::kText},
                    {"input_shape", "Input Shape", Unit::kText},
                    {"output_shape", "Output Shape", Unit::kText},
                    {"params", "Param #", Unit::kCount},
                    {"params_pct", "Param %", Unit::kPercent},
                    {"trainable", "Trainable", Unit::kText},
                    {"mult_adds", "Mult-Adds", Unit::kCount},
                    {"depth", "Depth", Unit::kCount, false},
                    {"type", "Type", Unit::kText, false}});
  for (size_t i = 0; i < s.modules.size(); ++i) {
    const ModuleInfo& m = s.modules[i];
    if (m.depth > depth) continue;
    const bool own = m.params > 0;
    Value pct;
    if (own && s.total_params > 0) {
      pct = 100.0 * static_cast<double>(m.params) / static_cast<double>(s.total_params);
    }
    std::string trainable;
    if (own) trainable = TrainableText(m.trainable, m.params);
    t.rows.push_back({LayerLabel(s.modules, i), m.name, ShapeText(m, m.input_shape),
                      ShapeText(m, m.output_shape), own ? Value(m.params) : Value(), pct, trainable,
                      m.mult_adds > 0 ? Value(m.mult_adds) : Value(), static_cast<int64_t>(m.depth),
                      m.type});
    if (m.depth != depth) continue;
    // What the depth limit hides under this row, so every parameter is in some row.
    const Hidden h = HiddenUnder(s, i);
    if (h.modules == 0) continue;
    const bool hp = h.params > 0 && s.total_params > 0;
    t.rows.push_back(
        {fmt::format("{}└─… {} more module{}", std::string(3 * (m.depth + 1), ' '), h.modules,
                     h.modules == 1 ? "" : "s"),
         m.name.empty() ? "*" : m.name + ".*", "", "", h.params > 0 ? Value(h.params) : Value(),
         hp ? Value(100.0 * static_cast<double>(h.params) / static_cast<double>(s.total_params))
            : Value(),
         h.params > 0 ? TrainableText(h.trainable, h.params) : "", Value(),
         static_cast<int64_t>(m.depth + 1), std::string("(below depth)")});
  }
  t.notes = s.notes;
  t.notes.push_back(
      "Param # counts a module's own parameters (containers show '-'); sizes in binary units "
      "(torchinfo prints MB = 10^6 bytes).");
  sec.AddMetric("total_params", "Total params", s.total_params, Unit::kCount);
  sec.AddMetric("trainable_params", "Trainable params", s.trainable_params, Unit::kCount);
  sec.AddMetric("non_trainable_params", "Non-trainable params", s.total_params - s.trainable_params,
                Unit::kCount);
  sec.AddMetric("total_mult_adds", "Total mult-adds", s.total_mult_adds, Unit::kCount);
  sec.AddMetric("input_size_bytes", "Input size", s.input_bytes, Unit::kBytes);
  sec.AddMetric("forward_backward_pass_size_bytes", "Forward/backward pass size",
                s.forward_backward_bytes, Unit::kBytes);
  sec.AddMetric("params_size_bytes", "Params size", s.param_bytes, Unit::kBytes);
  sec.AddMetric("estimated_total_size_bytes", "Estimated total size", s.EstimatedTotalBytes(),
                Unit::kBytes);
}

Status AddModelSummary(const ModelSummary& s, int64_t depth, const std::string& run_dir,
                       report::Report& report) {
  AddModelSummarySection(s, depth, report);
  report::Report only;
  only.title = fmt::format("Model summary: {}", s.model_type);
  only.sections.push_back(*report.FindSection("model_summary"));
  std::ostringstream text;
  report::TerminalRenderer().Render(only, text);
  return base::WriteFileAtomically(run_dir + "/model_summary.txt", text.str());
}

}  // namespace trainprof::torchlib
