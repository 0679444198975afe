#include "analysis/run/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/text.h"

namespace trainprof::analysis {
namespace {

using R = AnalyzeRequest;

const std::vector<AnalyzeOption>& List() {
  static const std::vector<AnalyzeOption> kList = {
      {.keyword = "steps",
       .kind = OptionKind::kChoice,
       .field = &R::steps,
       .help = "complete: drop trailing steps whose GPU work was not captured (as the "
               "TensorBoard plugin does); all: keep every ProfilerStep",
       .expects = "\"complete\" or \"all\"",
       .choices = {"complete", "all"},
       .diff = true},
      {.keyword = "threads",
       .kind = OptionKind::kInt,
       .field = &R::threads,
       .help = "Files read in parallel (0: one per core)",
       .expects = "an int from 0 to 1024",
       .min = 0,
       .max = 1024,
       .diff = true},
      {.keyword = "allow_data_errors",
       .kind = OptionKind::kFlag,
       .field = &R::allow_data_errors,
       .help = "A data error (a trace cut short) is not a failure: the command exits 0, not 4, "
               "after writing its reports; trainprof.analyze returns the analysis, not raising",
       .expects = "a bool",
       .diff = true},
      {.keyword = "hta_compat",
       .kind = OptionKind::kFlag,
       .field = &R::hta_compat,
       .help = "HTA breakdowns on HTA 0.6.1's selection: all work before the last "
               "ProfilerStep, times rounded to whole µs, HTA's kernel-name rules",
       .expects = "a bool"},
      {.keyword = "hta_last_step",
       .kind = OptionKind::kFlag,
       .field = &R::hta_last_step,
       .help = "With --hta-compat, keep the last ProfilerStep (HTA's "
               "include_last_profiler_step=True)",
       .expects = "a bool"},
      {.keyword = "kernel_wait_us",
       .kind = OptionKind::kPositive,
       .field = &R::kernel_wait_us,
       .help = "Idle gaps shorter than this are kernel wait (HTA's consecutive_kernel_delay)",
       .expects = "a number > 0"},
      {.keyword = "runtime_cutoff_us",
       .kind = OptionKind::kPositive,
       .field = &R::runtime_cutoff_us,
       .help = "Launch calls longer than this are runtime outliers",
       .expects = "a number > 0"},
      {.keyword = "launch_delay_cutoff_us",
       .kind = OptionKind::kPositive,
       .field = &R::launch_delay_cutoff_us,
       .help = "Launch delays longer than this are delay outliers",
       .expects = "a number > 0"},
      {.keyword = "top_kernels",
       .kind = OptionKind::kInt,
       .field = &R::top_kernels,
       .help = "Kernels listed per kernel type",
       .expects = "an int from 1 to 10000",
       .min = 1,
       .max = 10000},
      {.keyword = "hta_duration_ratio",
       .kind = OptionKind::kFraction,
       .field = &R::hta_duration_ratio,
       .help = "With --hta-compat, kernels past this share of the running sum of their type's "
               "time fold into \"others\" (HTA's duration_ratio)",
       .expects = "a number above 0, at most 1"},
      {.keyword = "dataloader_pattern",
       .kind = OptionKind::kTexts,
       .field = &R::dataloader_patterns,
       .help = "Ranges whose name contains this mark the data loader too (repeatable), "
               "e.g. --dataloader-pattern load_batch",
       .expects = "a non-empty str or a list of them"},
      {.keyword = "steps_from",
       .kind = OptionKind::kTexts,
       .field = &R::steps_from,
       .help = "Host ranges named this, or this and a number (\"step 12\", \"train_step#12\"), are "
               "the steps too (repeatable), for traces without ProfilerStep ranges: an Nsight "
               "profile's NVTX ranges, your own record_function",
       .expects = "a non-empty str or a list of them"},
      {.keyword = "peak_tflops",
       .kind = OptionKind::kPositive,
       .field = &R::peak_tflops,
       .help = "The GPU's peak TFLOP/s for MFU and the roofline, in every number format, "
               "instead of the table's for its name",
       .expects = "a number > 0"},
      {.keyword = "peak_tbps",
       .kind = OptionKind::kPositive,
       .field = &R::peak_tbps,
       .help = "The GPU's memory bandwidth in TB/s for the roofline, instead of the table's",
       .expects = "a number > 0"},
      {.keyword = "capture_trace",
       .kind = OptionKind::kPaths,
       .field = &R::capture_traces,
       .help = "The trace taken while CUDA/HIP graphs were captured (a file or folder; "
               "repeatable): each graph kernel is credited to the operator that launched it "
               "there. Default: capture_traces/ beside the trace, as vLLM and SGLang write it",
       .expects = "a path or a list of paths that exist"},
      {.keyword = "critical_path",
       .kind = OptionKind::kOptionalText,
       .field = &R::critical_path,
       .help =
           "HTA's critical path of each analysed step, or of the INSTANCE-th (from 0) "
           "range whose name contains ANNOTATION (put it after PATH); \":0\" is the whole trace, "
           "as HTA's annotation \"\"",
       .expects = "True (each analysed step) or \"ANNOTATION[:INSTANCE[-LAST]]\"",
       .metavar = "[ANNOTATION[:INSTANCE[-LAST]]]"},
      {.keyword = "critical_path_all_edges",
       .kind = OptionKind::kFlag,
       .field = &R::critical_path_all_edges,
       .help = "With --critical-path: keep every edge of the path's graph, not only the path's "
               "(for HTA's overlay with show_all_edges; the graph has about three edges an "
               "event)",
       .expects = "a bool"},
      {.keyword = "from_s",
       .kind = OptionKind::kSeconds,
       .field = &R::from_s,
       .help = "Memory snapshots: analyse from this many seconds after the history's first event",
       .expects = "a number of seconds >= 0",
       .diff = true,
       .flag = "--from"},
      {.keyword = "to_s",
       .kind = OptionKind::kSeconds,
       .field = &R::to_s,
       .help = "Memory snapshots: analyse up to this many seconds after the history's first "
               "event",
       .expects = "a number of seconds >= 0",
       .diff = true,
       .flag = "--to"},
      {.keyword = "data_load_events",
       .kind = OptionKind::kTexts,
       .field = &R::data_load_events,
       .help = "With --critical-path: host events whose names match this regular expression "
               "(repeatable) are data loading on the path, as HTA's data_load_events",
       .expects = "a non-empty str or a list of them"},
  };
  return kList;
}

Status Wrong(const AnalyzeOption& o) {
  return InvalidArgument(fmt::format("expected {}", o.expects));
}

// The value as texts: one text, or a list of them.
StatusOr<std::vector<std::string>> Texts(const AnalyzeOption& o, const OptionValue& v) {
  std::vector<std::string> out;
  if (const auto* s = std::get_if<std::string>(&v))
    out.push_back(*s);
  else if (const auto* l = std::get_if<std::vector<std::string>>(&v))
    out = *l;
  else
    return Wrong(o);
  for (const std::string& t : out) {
    if (t.empty()) return Wrong(o);
    std::error_code ec;
    if (o.kind == OptionKind::kPaths && !std::filesystem::exists(t, ec))
      return InvalidArgument(fmt::format("{} does not exist (expected {})", t, o.expects));
  }
  return out;
}

// The value checked against the option's kind, as the field's type takes it.
StatusOr<OptionValue> Checked(const AnalyzeOption& o, const OptionValue& v) {
  switch (o.kind) {
    case OptionKind::kFlag:
      if (!std::holds_alternative<bool>(v)) return Wrong(o);
      return v;
    case OptionKind::kChoice: {
      const auto* s = std::get_if<std::string>(&v);
      if (s == nullptr || std::find(o.choices.begin(), o.choices.end(), *s) == o.choices.end())
        return Wrong(o);
      return v;
    }
    case OptionKind::kInt: {
      const auto* i = std::get_if<int64_t>(&v);
      if (i == nullptr || *i < o.min || *i > o.max) return Wrong(o);
      return v;
    }
    case OptionKind::kPositive:
    case OptionKind::kFraction: {
      double d = 0;
      if (const auto* i = std::get_if<int64_t>(&v))
        d = static_cast<double>(*i);
      else if (const auto* x = std::get_if<double>(&v))
        d = *x;
      else
        return Wrong(o);
      if (!(d > 0) || (o.kind == OptionKind::kFraction && !(d <= 1))) return Wrong(o);
      return OptionValue{d};
    }
    case OptionKind::kSeconds: {
      const auto* i = std::get_if<int64_t>(&v);
      const auto* x = std::get_if<double>(&v);
      const double d = i != nullptr ? static_cast<double>(*i) : x != nullptr ? *x : -1;
      // Above ~9.2e12 s the microseconds a window counts in no longer fit in 64 bits.
      if (!(d >= 0) || std::isinf(d) || d > 9.2e12) return Wrong(o);
      return OptionValue{d};
    }
    case OptionKind::kTexts:
    case OptionKind::kPaths: {
      TRAINPROF_ASSIGN_OR_RETURN(std::vector<std::string> t, Texts(o, v));
      return OptionValue{std::move(t)};
    }
    case OptionKind::kOptionalText:
      if (std::holds_alternative<std::string>(v) || std::holds_alternative<std::monostate>(v))
        return v;
      if (const auto* b = std::get_if<bool>(&v))
        return *b ? OptionValue{std::string()} : OptionValue{};
      return Wrong(o);
  }
  return Wrong(o);
}

// Sets the checked value in its field.
struct Assign {
  const OptionValue& v;
  R& r;
  void operator()(bool R::*f) const { r.*f = std::get<bool>(v); }
  void operator()(std::string R::*f) const { r.*f = std::get<std::string>(v); }
  void operator()(int R::*f) const { r.*f = static_cast<int>(std::get<int64_t>(v)); }
  void operator()(double R::*f) const { r.*f = std::get<double>(v); }
  void operator()(std::vector<std::string> R::*f) const {
    r.*f = std::get<std::vector<std::string>>(v);
  }
  void operator()(std::optional<std::string> R::*f) const {
    if (const auto* s = std::get_if<std::string>(&v))
      r.*f = *s;
    else
      (r.*f).reset();
  }
};

}  // namespace

std::span<const AnalyzeOption> AnalyzeOptionList() { return List(); }

const AnalyzeOption* FindAnalyzeOption(std::string_view keyword) {
  for (const AnalyzeOption& o : List())
    if (o.keyword == keyword) return &o;
  return nullptr;
}

std::string FlagOf(const AnalyzeOption& o) {
  if (!o.flag.empty()) return std::string(o.flag);
  std::string flag = "--" + std::string(o.keyword);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

Status SetOption(const AnalyzeOption& o, const OptionValue& v, AnalyzeRequest& r) {
  TRAINPROF_ASSIGN_OR_RETURN(OptionValue checked, Checked(o, v));
  std::visit(Assign{checked, r}, o.field);
  return Status::Ok();
}

std::vector<std::string> AnalyzeOptionKeywords() {
  std::vector<std::string> names;
  for (const AnalyzeOption& o : List()) names.emplace_back(o.keyword);
  return names;
}

std::string NearestOption(std::string_view keyword) {
  return base::NearestWord(keyword, AnalyzeOptionKeywords());
}

}  // namespace trainprof::analysis
