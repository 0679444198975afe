// The GPU events an HTA analysis reads (hta.cc): the selection (our analysed steps at exact
// times, or HTA 0.6.1's own with its µs rounding), and the interval merge each selection uses.
// Internal to src/analysis/.
//
//   HtaEvents ev = SelectHtaEvents(model, steps, options);
//   Temporal t = TemporalBreakdown(ev);
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "analysis/intervals.h"
#include "analysis/steps.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// The options of HTA's breakdowns (hta.h), here where the event selections read them.
struct HtaOptions {
  bool hta_compat = false;
  // HTA drops the last step only when the traces hold at least two distinct ProfilerStep names
  // (counted over all ranks); the caller counts them.
  bool compat_drop_last_step = true;
  bool keep_last_step = false;  // HTA's include_last_profiler_step=True: never drop it
  int64_t consecutive_kernel_delay_ns = 30'000;  // idle gaps shorter than this: kernel wait
  int64_t runtime_cutoff_ns = 50'000;            // launches longer: runtime outliers
  int64_t launch_delay_cutoff_ns = 100'000;      // launch delays longer: delay outliers
  int top_kernels = 10;                          // kernels listed per type, the rest "others"
  double duration_ratio = 0.8;  // --hta-compat's fold of the kernels past it (HtaFold)
};

inline constexpr int64_t kNoLaunch = std::numeric_limits<int64_t>::min();
inline constexpr int kHtaOtherType = -1;  // HTA's OTHER: neither analysed nor counted as compute
// HTA 0.6.1's kernel-type rule on names (anchored regexes; "OTHER" for names containing Sync),
// the compat selection's (hta.cc). Returns kHtaOtherType for OTHER.
int HtaKernelType(std::string_view name);

// Event times as a selection sees them: exact, or (--hta-compat) rounded to whole µs as HTA
// does, start up and end down, when any timestamp has a fraction. HTA holds times as float64 µs:
// at today's epoch (1.7e15 µs) that is a 0.25 µs grid, so the rounding acts on the float, not on
// the written decimals, which are after baseTimeNanoseconds when the trace has one.
struct HtaTimes {
  const trace::TraceModel& m;
  bool compat = false;
  bool round = false;
  int64_t base = 0;

  HtaTimes(const trace::TraceModel& model, bool hta_compat);
  double Us(int64_t ns) const {
    ns -= base;
    return static_cast<double>(ns / 1000) + static_cast<double>(ns % 1000) / 1000.0;
  }
  int64_t ts(size_t i) const {
    if (!round) return m.ts_ns[i];
    return static_cast<int64_t>(std::ceil(Us(m.ts_ns[i]))) * 1000 + base;
  }
  int64_t end(size_t i) const {
    if (!round) return m.end_ns(i);
    double e = Us(m.ts_ns[i]) + static_cast<double>(m.dur_ns[i]) / 1000.0;
    return static_cast<int64_t>(std::floor(e)) * 1000 + base;
  }
  // The event's stream, -1 for CPU events; HTA (compat) also takes a CPU op's stream kwarg.
  int64_t stream(size_t i) const {
    const int64_t s = m.stream_of(i);
    return s == -1 && compat ? m.HostStreamOf(i) : s;
  }
};

// One GPU event as an HTA breakdown sees it: its times, and the rest from the model. Small,
// since a big trace has a million of them.
struct HtaEv {
  int64_t ts, end;
  uint32_t event;  // index in the model
  int8_t type;     // KernelType as int, or kHtaOtherType
};

// The launch call of an event's GPU work, on the same clock as the event.
struct HtaLaunch {
  int64_t ts = kNoLaunch, dur = 0;
  uint32_t name = 0;
};

// The selected events with their clock, and the unions every breakdown shares.
struct HtaEvents {
  HtaTimes times;
  bool compat = false;
  std::vector<HtaEv> ev;
  Intervals busy, comp, comm, mem;  // union of all, computation, communication, memory
  // --hta-compat: the first and last start of every event HTA keeps (its get_trace_duration is
  // their difference); 0 otherwise.
  int64_t first_ts = 0, last_ts = 0;
  // --hta-compat: HTA keeps the CPU events that start before this (the last ProfilerStep's
  // start when it drops the last step; else the largest time).
  int64_t cpu_before = std::numeric_limits<int64_t>::max();

  const trace::TraceModel& model() const { return times.m; }
};

HtaEvents SelectHtaEvents(const trace::TraceModel& m, const StepsResult& steps,
                          const HtaOptions& o);
HtaLaunch LaunchOf(const HtaTimes& t, const HtaEv& e);

}  // namespace trainprof::analysis
