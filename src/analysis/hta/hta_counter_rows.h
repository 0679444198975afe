// What HTA 0.6.1's counter analyses other than queue length (hta_counters.h) read from one
// rank, for the drop-in (trainprof.hta): the memory bandwidth of each memcpy and memset HTA
// keeps (get_memory_bw_time_series, its summary and generate_trace_with_counters' "Memcpy BW"
// counters), and CUPTI's range-profiler counters with the operators that launched each range
// (get_cupti_counter_data_with_operators).
//
//   std::vector<MemoryBwRow> bw = HtaMemoryBwRows(model, RankHtaOptions(model, options.hta));
//   CounterRanges r = HtaCounterRanges(model, options);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/hta/hta_events.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// One memcpy or memset on HTA's selection and µs times, with Kineto's "memory bandwidth (GB/s)"
// (0 when the trace does not give it, as HTA's default); a zero duration counts as 1 µs, as HTA.
struct MemoryBwRow {
  int64_t ts_ns = 0, end_ns = 0, pid = 0;
  std::string name;
  double gbps = 0;
};
std::vector<MemoryBwRow> HtaMemoryBwRows(const trace::TraceModel& m, const HtaOptions& o);

// One cuda_profiler_range (a kernel CUPTI's range profiler measured) with its counters, and the
// CPU operators around the launch call HTA pairs it with (the k-th range by start with the k-th
// cudaLaunchKernel call by start), outermost first.
struct CounterRange {
  int64_t ts_ns = 0, dur_ns = 0, pid = 0, tid = 0;
  std::string name;
  std::vector<std::pair<std::string, double>> counters;
  std::vector<std::string> op_stack;
};
struct CounterRanges {
  bool any = false;      // the trace has cuda_profiler_range events
  bool matched = false;  // as many ranges as launch calls: HTA's rows; else none, as HTA
  int64_t ranges = 0, launches = 0;
  std::vector<CounterRange> rows;  // by start
};
CounterRanges HtaCounterRanges(const trace::TraceModel& m, const HtaOptions& o);

}  // namespace trainprof::analysis
