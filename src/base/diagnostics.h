// Every diagnostic trainprof can report, in one X-macro list: its id, its stable name, its
// severity and what it means for the figures. Emitters name a diagnostic by its DiagnosticId, so
// a name that is not in the list does not compile; the trace reader, the system sampler, the
// recorder and the rank merge all fill the one record type, `Diagnostic`. The data-quality
// section prints the meanings; docs/trace-analysis.md's table is tested against this list.
//
//   model.diagnostics.push_back({base::DiagnosticId::kTruncated, 1, "a.json: cut at byte 9"});
//   if (d.severity() == base::DataSeverity::kError) exit_code = 4;
//
// A new diagnostic is one line in TRAINPROF_DIAGNOSTICS (and its row in the docs' table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace trainprof::base {

enum class DataSeverity {
  kInfo,      // nothing is lost; the figures stand
  kDataLoss,  // some input was skipped; the figures cover the rest
  kError,     // the figures cannot be trusted as they stand
};
const char* DataSeverityName(DataSeverity s);  // "info", "data loss", "error"

// X(id, "name", severity, "meaning"): the meaning is one sentence on what it means for the
// figures. The order is the docs' table order.
// clang-format off
#define TRAINPROF_DIAGNOSTICS(X)                                                                  \
  /* The trace reader. */                                                                         \
  X(kTruncated, "truncated", kError,                                                              \
    "The file ends inside its events: the events before the cut are read, but Kineto writes "     \
    "GPU events last, so no GPU figure is given.")                                                \
  X(kOversizedValue, "oversized_value", kDataLoss,                                                \
    "An event or value over the size limit was skipped unread; the figures leave it out.")        \
  X(kMissingFields, "missing_fields", kDataLoss,                                                  \
    "Events without ph, name, a numeric ts or dur were skipped; the figures leave them out.")     \
  X(kBadTime, "bad_time", kDataLoss,                                                              \
    "Events with a negative, NaN or infinite time were skipped; the figures leave them out.")     \
  X(kControlCharacter, "control_character", kInfo,                                                \
    "Strings held raw control characters (tabs in names); they were read as they are.")           \
  X(kInvalidUtf8, "invalid_utf8", kInfo,                                                          \
    "Strings held bytes that are not UTF-8; each reads as U+FFFD in names and reports.")          \
  X(kProfilerRange, "profiler_range", kInfo,                                                      \
    "CUPTI range-profiler events have made-up times: the trace has no GPU timeline.")             \
  X(kUnknownCategory, "unknown_category", kInfo,                                                  \
    "Events of a category no analysis knows are kept as other; no figure uses them.")             \
  X(kUnpairedFlows, "unpaired_flows", kInfo,                                                      \
    "CPU-to-GPU flow arrows without a partner were ignored; launches are linked by correlation "  \
    "id instead.")                                                                                \
  X(kBadMetadata, "bad_metadata", kDataLoss,                                                      \
    "distributedInfo or deviceProperties could not be read: the rank or the GPU's properties "    \
    "are missing.")                                                                               \
  X(kRankUnknown, "rank_unknown", kInfo,                                                          \
    "No rank in the trace or the file name; the file is rank 0.")                                 \
  X(kDeviceIdsMapped, "device_ids_mapped", kInfo,                                                 \
    "Kernels named their GPU by another number than deviceProperties (ROCm counts HSA agents, "    \
    "CPUs first); they were mapped to it.")                                                       \
  X(kDeviceIdsUnmapped, "device_ids_unmapped", kInfo,                                             \
    "Kernels name a GPU that deviceProperties lacks; it is shown without name or memory.")        \
  X(kDeviceIdsUnchecked, "device_ids_unchecked", kInfo,                                           \
    "A ROCm trace with several GPUs and no memory events: which GPU the kernels' device id is "   \
    "cannot be checked.")                                                                         \
  X(kDeviceNameInferred, "device_name_inferred", kInfo,                                           \
    "The trace names no GPU; its model was told from its architecture, compute units and "        \
    "memory.")                                                                                    \
  X(kDuplicateRank, "duplicate_rank", kInfo,                                                      \
    "Two files name the same rank; each is analysed and labelled with its file.")                 \
  X(kMissingRanks, "missing_ranks", kInfo,                                                       \
    "The world size names ranks with no trace here: what they waited or made others wait is not " \
    "seen; the figures cover the ranks present.")                                                 \
  X(kFilesOfOneProcess, "files_of_one_process", kInfo,                                           \
    "Several files of one process (one per profiling cycle) were read as one rank.")             \
  X(kMemoryFromDeltas, "memory_from_deltas", kInfo,                                               \
    "The memory peak was rebuilt from allocation changes; memory allocated before profiling "     \
    "began is not in it.")                                                                        \
  X(kInputSkipped, "input_skipped", kInfo,                                                        \
    "An entry of the input folder is not a trace and was left out.")                              \
  X(kOpenRange, "open_range", kDataLoss,                                                          \
    "NVTX ranges without an end (the profile stopped inside them) were left out.")                \
  X(kNsysNotRecorded, "nsys_not_recorded", kInfo,                                                 \
    "The Nsight Systems export lacks a table trainprof reads (GPU properties, CUDA API calls); "  \
    "the views that need it are empty.")                                                          \
  /* The system sampler. */                                                                       \
  X(kSystemSourceUnreadable, "system_source_unreadable", kDataLoss,                               \
    "A /proc or /sys source could not be read; its series are missing.")                          \
  X(kSystemSourceMalformed, "system_source_malformed", kDataLoss,                                 \
    "A /proc or /sys source had unexpected content; its samples were skipped.")                   \
  X(kSystemCounterBackwards, "system_counter_backwards", kInfo,                                   \
    "A cumulative counter went backwards (a reset); that interval was skipped.")                  \
  X(kSystemOutOfDescriptors, "system_out_of_descriptors", kDataLoss,                              \
    "Too many processes to keep a file open for each; some were sampled less often.")             \
  X(kNvmlError, "nvml_error", kDataLoss, "An NVML query failed; that GPU figure is missing.")     \
  X(kRocmSmiError, "rocm_smi_error", kDataLoss,                                                   \
    "A ROCm SMI query failed; that GPU figure is missing.")                                       \
  X(kGpuFigureNotSupported, "gpu_figure_not_supported", kInfo,                                    \
    "The GPU or its driver does not report a figure; its series is left empty.")                  \
  X(kGpuLost, "gpu_lost", kDataLoss, "A GPU stopped answering; its series end there.")            \
  /* The recorder and the rank merge. */                                                          \
  X(kDroppedEvents, "dropped_events", kDataLoss,                                                  \
    "The event buffer was full: events were counted but not kept; the statistics cover the "      \
    "rest.")                                                                                      \
  X(kCudaEventsUnavailable, "cuda_events_unavailable", kInfo,                                     \
    "CUDA events could not be used; the time report has wall-clock time only.")                   \
  X(kCudaEventsExhausted, "cuda_events_exhausted", kDataLoss,                                     \
    "Every CUDA event pair was in use; the scopes that found none have no GPU time.")             \
  X(kReportNotAvailable, "report_not_available", kInfo,                                           \
    "A report was enabled, but no collector for it was attached; nothing was measured for it.")   \
  X(kRankFailed, "rank_failed", kError, "A rank ended with an error; the merged figures lack it.") \
  X(kRankMissing, "rank_missing", kError, "A rank never reported; the merged figures lack it.")   \
  X(kSessionReportUnreadable, "session_report_unreadable", kDataLoss,                             \
    "The session's report.json could not be read; its sections are missing.")                     \
  /* The operator observer, the model summary and CUDA memory (LibTorch and Python). */           \
  X(kDroppedOperatorEvents, "dropped_operator_events", kDataLoss,                                 \
    "The operator buffer was full; the operator table covers the rest.")                          \
  X(kOperatorsNestedTooDeep, "operators_nested_too_deep", kInfo,                                  \
    "Operator calls nested more than 128 deep were not timed; the operator table leaves them "     \
    "out.")                                                                                      \
  X(kOperatorsNotOnThisRank, "operators_not_on_this_rank", kInfo,                                 \
    "memory.trace_rank0_only is set, so this rank has no operator table.")                        \
  X(kMemoryScheduleNotReached, "memory_schedule_not_reached", kDataLoss,                          \
    "The run ended before the operator window (memory.warmup + memory.steps) did; the operator "  \
    "table covers the steps it recorded.")                                                             \
  X(kMemorySchedulePassed, "memory_schedule_passed", kDataLoss,                                   \
    "The operator profiler was attached after its window of steps; there is no operator table.")  \
  X(kCudaActivityUnavailable, "cuda_activity_unavailable", kInfo,                                \
    "GPU kernels could not be recorded (no driver, CUPTI busy or not built); the operator "       \
    "table has no CUDA time columns.")                                                            \
  X(kCudaActivityDropped, "cuda_activity_dropped", kDataLoss,                                     \
    "CUPTI dropped GPU activity records (its buffers were full): GPU times are low.")             \
  X(kCudaOutOfMemory, "cuda_out_of_memory", kDataLoss,                                            \
    "The CUDA caching allocator ran out of memory at least once; the steps it hit may have "      \
    "failed or been retried.")                                                                    \
  X(kCudaAllocRetries, "cuda_alloc_retries", kDataLoss,                                           \
    "The CUDA caching allocator freed its cache and retried allocations: those steps were "       \
    "slowed by memory pressure.")                                                                 \
  X(kCudaMemoryWithoutCuda, "cuda_memory_without_cuda", kInfo,                                    \
    "torch sees no CUDA device, so there is no CUDA memory table.")                               \
  X(kModelSummaryNotTaken, "model_summary_not_taken", kDataLoss,                                  \
    "The model summary was enabled, but no model was given to it; there is no model summary.")    \
  X(kModelSummaryWithoutShapes, "model_summary_without_shapes", kDataLoss,                        \
    "The forward pass that gives the model summary its shapes failed; the summary has no "        \
    "shapes.")                                                                                    \
  X(kSnapshotNeedsCuda, "snapshot_needs_cuda", kInfo,                                             \
    "The memory snapshot needs a CUDA build of torch and a GPU; none was written.")               \
  X(kSnapshotNeedsTorch21, "snapshot_needs_torch_2_1", kInfo,                                     \
    "The memory snapshot needs PyTorch 2.1 or later; none was written.")                          \
  X(kSnapshotHistory, "snapshot_history", kInfo,                                                  \
    "Which steps the allocator history recorded, with which stacks and ring-buffer size.")        \
  X(kSnapshotOomUnavailable, "snapshot_oom_unavailable", kInfo,                                   \
    "This torch has no out-of-memory observer, so no snapshot is written at an OOM.")             \
  X(kSnapshotOomNotWritten, "snapshot_oom_not_written", kDataLoss,                                \
    "The allocator ran out of memory, but the snapshot of that moment could not be written.")     \
  X(kSnapshotUnreadable, "snapshot_unreadable", kDataLoss,                                        \
    "A memory snapshot the run wrote could not be read back, so the report has no analysis of "   \
    "it.")                                                                                        \
  X(kRolesWithoutOptimizer, "roles_without_optimizer", kInfo,                                    \
    "Memory by role was measured with no optimizer given to trainprof.torch.attach: optimizer "   \
    "state is not measured.")                                                                     \
  X(kTorchProfilerLegacy, "torch_profiler_legacy", kInfo,                                         \
    "torch is built without Kineto: operators are CPU only, with no kernels or GPU sections.")     \
  X(kTorchTraceWithoutGpu, "torch_trace_without_gpu", kInfo,                                      \
    "The torch.profiler trace holds no GPU activity, so there are no GPU sections.")              \
  X(kKernelsOverlapOnStream, "kernels_overlap_on_stream", kInfo,                                \
    "GPU work on one stream overlaps in time (ROCm's durations, or programmatic dependent "      \
    "launch); busy time counts each instant once.")                                               \
  X(kGraphKernelsMapped, "graph_kernels_mapped", kInfo,                                          \
    "Graph kernels are credited to the operators that launched them in the capture trace.")      \
  X(kGraphKernelsUnmapped, "graph_kernels_unmapped", kInfo,                                      \
    "Some graph launches matched no capture window, kernel for kernel; their kernels stay on a "  \
    "row per graph launch.")                                                                      \
  /* Reports read back. */                                                                        \
  X(kUnrecognized, "unrecognized_diagnostic", kDataLoss,                                          \
    "A report read back named a diagnostic this trainprof does not know; its message starts "     \
    "with that name.")
// clang-format on

enum class DiagnosticId : uint16_t {
#define TRAINPROF_DIAGNOSTIC_ID(id, name, severity, meaning) id,
  TRAINPROF_DIAGNOSTICS(TRAINPROF_DIAGNOSTIC_ID)
#undef TRAINPROF_DIAGNOSTIC_ID
};

// A diagnostic named in code: its id, or its name as a string literal, which is looked up when
// the code compiles, so an unregistered name is a compile error ("not a constant expression"
// at the literal), never a diagnostic the registry does not describe.
//
//   m.AddDiagnostic("truncated", 1, msg);        // the same as DiagnosticId::kTruncated
//   m.AddDiagnostic("no_such_thing", 1, msg);    // does not compile
class DiagnosticName {
 public:
  constexpr DiagnosticName(DiagnosticId id) : id_(id) {}             // NOLINT: implicit by design
  consteval DiagnosticName(const char* name) : id_(Lookup(name)) {}  // NOLINT: implicit
  constexpr DiagnosticId id() const { return id_; }

 private:
  static consteval DiagnosticId Lookup(std::string_view name) {
    constexpr std::string_view kNames[] = {
#define TRAINPROF_DIAGNOSTIC_NAME(id, name, severity, meaning) name,
        TRAINPROF_DIAGNOSTICS(TRAINPROF_DIAGNOSTIC_NAME)
#undef TRAINPROF_DIAGNOSTIC_NAME
    };
    for (size_t i = 0; i < std::size(kNames); ++i)
      if (kNames[i] == name) return static_cast<DiagnosticId>(i);
    throw "not a diagnostic of TRAINPROF_DIAGNOSTICS (base/diagnostics.h): register it there";
  }
  DiagnosticId id_;
};

struct DiagnosticKind {
  DiagnosticId id;
  std::string_view name;  // stable: report.json, the CSVs, the .tpsum file
  DataSeverity severity;
  std::string_view meaning;  // one sentence: what it means for the figures
};

// Every kind, in the list's order (kinds[i].id == DiagnosticId(i)).
std::span<const DiagnosticKind> DiagnosticKinds();
const DiagnosticKind& KindOf(DiagnosticId id);
// The id of a registered name; nullopt for any other (a name read from a file).
std::optional<DiagnosticId> FindDiagnosticId(std::string_view name);

// Something about the input or the recording the user should know (dropped events, a cut
// file, ...): what, how often, and one line naming where. Per-event problems are counted, not
// fatal. Its name, severity and meaning are the registry's.
struct Diagnostic {
  Diagnostic() = default;
  Diagnostic(DiagnosticName kind, int64_t n, std::string text)
      : id(kind.id()), count(n), message(std::move(text)) {}

  DiagnosticId id = DiagnosticId::kUnrecognized;
  int64_t count = 0;
  std::string message;  // one line, names the file or the source

  std::string_view name() const { return KindOf(id).name; }
  DataSeverity severity() const { return KindOf(id).severity; }
  std::string_view meaning() const { return KindOf(id).meaning; }
};

// A diagnostic read back by name (report.json, a rank's report, a .tpsum file): a registered
// name keeps its kind; any other becomes kUnrecognized, its message prefixed with the name.
Diagnostic DiagnosticFromName(std::string_view name, int64_t count, std::string message);

}  // namespace trainprof::base
