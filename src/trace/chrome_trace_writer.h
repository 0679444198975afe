// Writes the Chrome trace event format (JSON object form) that Perfetto UI and chrome://tracing
// open: complete events (ph "X"), counters (ph "C") and process/thread names (ph "M").
// Timestamps are nanoseconds in, microseconds with three decimals out, so nothing is rounded.
// The file is written under a temporary name and renamed by Close().
//
//   trace::ChromeTraceWriter w;
//   TRAINPROF_RETURN_IF_ERROR(w.Open("run/trace.json"));
//   w.ProcessName(1, "trainprof");
//   w.ThreadName(1, 42, "main");
//   trace::NameId fwd = w.InternName("[Model].forward");
//   w.Complete(fwd, trace::kCatScope, /*ts_ns=*/1500, /*dur_ns=*/2500, 1, 42, /*step=*/3);
//   TRAINPROF_RETURN_IF_ERROR(w.Close());
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/atomic_file.h"
#include "trainprof/status.h"

namespace trainprof::trace {

using NameId = uint32_t;

// Event categories trainprof writes.
inline constexpr std::string_view kCatScope = "trainprof";
inline constexpr std::string_view kCatStep = "user_annotation";  // as Kineto labels ProfilerStep#N

// A counter track ("C" events): one named curve, samples in ns since the trace's origin.
struct CounterTrack {
  std::string name;
  std::vector<int64_t> t_ns;
  std::vector<double> values;
};

class ChromeTraceWriter {
 public:
  // Errors: the file cannot be created (message names it).
  Status Open(const std::string& path);
  // Writes into `out` instead of a file (benchmarks, tests). Close() then only finishes the JSON.
  void OpenString(std::string* out);

  // Escapes `name` once; later events refer to it by id.
  NameId InternName(std::string_view name);

  void ProcessName(int64_t pid, std::string_view name);
  void ThreadName(int64_t pid, int64_t tid, std::string_view name);
  // step < 0: no "step" arg. `args`: more members of the args object, as JSON text
  // (`"Input Dims":[[2,3]]`), written as given.
  void Complete(NameId name, std::string_view cat, int64_t ts_ns, int64_t dur_ns, int64_t pid,
                int64_t tid, int64_t step, std::string_view args = {});
  // One counter track sample: {"name": value}.
  void Counter(std::string_view name, int64_t ts_ns, int64_t pid, double value);

  // One end of a launch-to-kernel arrow, as Kineto writes them (category "ac2g"): the start on
  // the launching call's thread, the finish ("bp":"e") on the kernel's stream.
  void Flow(uint64_t id, int64_t ts_ns, int64_t pid, int64_t tid, bool start);

  // Adds "otherData": {key: value} string pairs written at Close().
  void OtherData(std::string key, std::string value);
  // Adds a top-level member written as given at Close() ("deviceProperties": [...]).
  void TopLevel(std::string key, std::string json);

  // Finishes the JSON; for a file, flushes and renames it into place. Errors name the file.
  Status Close();
  uint64_t bytes_written() const { return bytes_; }

 private:
  void BeginEvent();
  void AppendTimeUs(int64_t ns);
  void MaybeFlush();

  base::AtomicFile file_;
  std::string* target_ = nullptr;  // string mode
  std::string buf_;
  std::vector<std::string> names_;  // escaped
  std::vector<std::pair<std::string, std::string>> other_;
  std::vector<std::pair<std::string, std::string>> top_;  // key, JSON value
  bool first_ = true;
  bool open_ = false;
  uint64_t bytes_ = 0;
};

}  // namespace trainprof::trace
