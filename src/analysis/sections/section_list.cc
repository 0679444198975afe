// The sections of `trainprof analyze`'s report, in report order: one line a section (its id, the
// function that adds it, whether it shows GPU work only, whether a report across ranks has it,
// its heading in docs/trace-analysis.md). A new view is its file and one line here.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/sections/sections.h"

namespace trainprof::analysis {

const std::vector<SectionDescriptor>& AnalyzeSections() {
  // clang-format off
  static const std::vector<SectionDescriptor> kSections = {
      {"overview", AddOverviewSection, false, true, "Overview (the plugin's Overview page)"},
      {"gpu", AddGpuSection, true, false, "GPU summary"},
      {"hta", AddHtaSection, true, false, "HTA's breakdowns"},
      {"idle_causes", AddIdleSection, true, false, "GPU idle time by cause"},
      {"operator_view", AddOperatorSection, false, false, "Operator view (the plugin's Operator page)"},
      {"kernel_view", AddKernelSection, true, false, "Kernel view (the plugin's Kernel page)"},
      {"kernel_sequences", AddKernelSequencesSection, true, false,
       "Frequent kernel sequences (HTA's `get_frequent_cuda_kernel_sequences`)"},
      {"phase_view", AddPhaseSection, false, false, "Phase view"},
      {"module_view", AddModuleSection, false, false, "Module view (the plugin's Module page)"},
      {"memory", AddMemorySection, false, false, "Memory view (the plugin's Memory page)"},
      {"categories", AddCategorySection, true, false, "Operator categories"},
      {"mfu", AddMfuSection, false, false, "MFU and roofline"},
      {"roofline", AddRooflineSection, false, false, "Roofline per shape"},
      {"memcpy_bandwidth", AddMemcpyBandwidthSection, true, false,
       "Memcpy bandwidth per direction (HTA's augmented counters)"},
      {"distributed", AddDistributedView, false, true,
       "Distributed view and collectives (two ranks or more)"},
      {"cross_rank_path", AddCrossRankPathSection, false, true, ""},
      {"critical_path", AddCriticalPathView, false, false,
       "Critical path (`--critical-path`, HTA's algorithm)"},
      {"recommendations", AddRecommendationsSection, false, true, "Recommendations"},
  };
  // clang-format on
  return kSections;
}

const SectionDescriptor* FindSection(std::string_view id) {
  const auto& all = AnalyzeSections();
  auto it = std::ranges::find(all, id, &SectionDescriptor::id);
  return it == all.end() ? nullptr : &*it;
}

std::string DocOfSection(std::string_view section_id) {
  // Sections of reports other than analyze's, documented in the same page.
  static constexpr std::pair<std::string_view, std::string_view> kOthers[] = {
      {"data_quality", "Bad input"}, {"diff", "`trainprof diff A B`"}};
  std::string_view heading;
  if (const SectionDescriptor* d = FindSection(section_id)) heading = d->doc;
  for (const auto& [id, h] : kOthers)
    if (id == section_id) heading = h;
  return heading.empty() ? "" : fmt::format("docs/trace-analysis.md, section \"{}\"", heading);
}

}  // namespace trainprof::analysis
