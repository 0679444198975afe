#include "base/diagnostics.h"

#include <algorithm>

namespace trainprof::base {

const char* DataSeverityName(DataSeverity s) {
  switch (s) {
    case DataSeverity::kInfo:
      return "info";
    case DataSeverity::kDataLoss:
      return "data loss";
    case DataSeverity::kError:
      return "error";
  }
  return "error";
}

const std::vector<DiagnosticKind>& DiagnosticKinds() {
  using S = DataSeverity;
  static const std::vector<DiagnosticKind> kKinds = {
      // The trace reader.
      {"truncated", S::kError,
       "The file ends inside its events: the events before the cut are read, but Kineto writes "
       "GPU events last, so no GPU figure is given."},
      {"oversized_value", S::kDataLoss,
       "An event or value over the size limit was skipped unread; the figures leave it out."},
      {"missing_fields", S::kDataLoss,
       "Events without ph, name, a numeric ts or dur were skipped; the figures leave them out."},
      {"bad_time", S::kDataLoss,
       "Events with a negative, NaN or infinite time were skipped; the figures leave them out."},
      {"control_character", S::kInfo,
       "Strings held raw control characters (tabs in names); they were read as they are."},
      {"invalid_utf8", S::kInfo,
       "Strings held bytes that are not UTF-8; each reads as U+FFFD in names and reports."},
      {"profiler_range", S::kInfo,
       "CUPTI range-profiler events have made-up times: the trace has no GPU timeline."},
      {"unknown_category", S::kInfo,
       "Events of a category no analysis knows are kept as other; no figure uses them."},
      {"unpaired_flows", S::kInfo,
       "CPU-to-GPU flow arrows without a partner were ignored; launches are linked by "
       "correlation id instead."},
      {"bad_metadata", S::kDataLoss,
       "distributedInfo or deviceProperties could not be read: the rank or the GPU's "
       "properties are missing."},
      {"rank_unknown", S::kInfo, "No rank in the trace or the file name; the file is rank 0."},
      {"duplicate_rank", S::kInfo,
       "Two files name the same rank; each is analysed and labelled with its file."},
      {"memory_from_deltas", S::kInfo,
       "The memory peak was rebuilt from allocation changes; memory allocated before "
       "profiling began is not in it."},
      {"input_skipped", S::kInfo, "An entry of the input folder is not a trace and was left out."},
      // The system sampler.
      {"system_source_unreadable", S::kDataLoss,
       "A /proc or /sys source could not be read; its series are missing."},
      {"system_source_malformed", S::kDataLoss,
       "A /proc or /sys source had unexpected content; its samples were skipped."},
      {"system_counter_backwards", S::kInfo,
       "A cumulative counter went backwards (a reset); that interval was skipped."},
      {"system_out_of_descriptors", S::kDataLoss,
       "Too many processes to keep a file open for each; some were sampled less often."},
      {"nvml_error", S::kDataLoss, "An NVML query failed; that GPU figure is missing."},
      {"gpu_lost", S::kDataLoss, "A GPU stopped answering; its series end there."},
      // The recorder and the rank merge.
      {"dropped_events", S::kDataLoss,
       "The event buffer was full: events were counted but not kept; the statistics cover the "
       "rest."},
      {"dropped_operator_events", S::kDataLoss,
       "The operator buffer was full; the operator table covers the rest."},
      {"rank_failed", S::kError, "A rank ended with an error; the merged figures lack it."},
      {"rank_missing", S::kError, "A rank never reported; the merged figures lack it."},
      {"session_report_unreadable", S::kDataLoss,
       "The session's report.json could not be read; its sections are missing."},
  };
  return kKinds;
}

const DiagnosticKind* FindDiagnosticKind(std::string_view name) {
  const auto& k = DiagnosticKinds();
  auto it =
      std::find_if(k.begin(), k.end(), [&](const DiagnosticKind& d) { return d.name == name; });
  return it == k.end() ? nullptr : &*it;
}

DataSeverity SeverityOf(std::string_view name) {
  const DiagnosticKind* k = FindDiagnosticKind(name);
  return k ? k->severity : DataSeverity::kDataLoss;
}

}  // namespace trainprof::base
