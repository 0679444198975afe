// The frequent kernel sequences section (kernel_sequences.h): fusion candidates.
#include <fmt/format.h>

#include <string>

#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;

void AddKernelSequencesSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("kernel_sequences", "Frequent kernel sequences");
  report::Table& t = s.AddTable("kernel_sequences", "Kernel sequences per operator call",
                                {{"rank", "Rank", Unit::kText},
                                 {.key = "operator", .title = "Operator", .terminal_width = 60},
                                 {"kernels", "Kernels", Unit::kCount},
                                 {"calls", "Calls", Unit::kCount},
                                 {"total_s", "GPU time", Unit::kSeconds},
                                 {"mean_s", "GPU time per call", Unit::kSeconds},
                                 {.key = "sequence", .title = "Sequence", .terminal_width = 240}});
  ForEachRankTables(in, [&](size_t i, const RankTables& tables) {
    for (const KernelSequence& k : tables.kernel_sequences) {
      std::string seq;
      for (const std::string& name : k.kernels) seq += (seq.empty() ? "" : " → ") + name;
      t.rows.push_back({in.RankLabel(i), k.op, static_cast<int64_t>(k.kernels.size()), k.calls,
                        Seconds(k.total_ns),
                        Seconds(static_cast<double>(k.total_ns) / static_cast<double>(k.calls)),
                        seq});
    }
  });
  s.notes.push_back(fmt::format(
      "The kernels one outermost operator call launched, in GPU order, counted over the calls "
      "that launched exactly that sequence (at least 3 kernels, at least 2 calls): candidates "
      "for fusion{} or a CUDA graph.",
      in.AnyPyTorch() ? " (torch.compile)" : ""));
}

}  // namespace trainprof::analysis
