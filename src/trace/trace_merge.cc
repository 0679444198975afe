#include "trace/trace_merge.h"

#include <fmt/format.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"

namespace trainprof::trace {
namespace {

using Json = nlohmann::json;

// The whole file, gunzipped when it is gzip (zlib reads plain files as they are).
StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return NotFound(fmt::format("{}: cannot open", path));
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const std::string msg = gzerror(f, &err);  // owned by f: copied before gzclose frees it
  gzclose(f);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    return DataLoss(fmt::format("{}: cannot read: {}", path, msg));
  }
  return out;
}

StatusOr<Json> ParseJsonTrace(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("traceEvents") ||
      !j["traceEvents"].is_array()) {
    return InvalidArgument(
        fmt::format("{}: not a Chrome/Kineto trace (a JSON object with traceEvents)", path));
  }
  return j;
}

// The trace's time base in ns: baseTimeNanoseconds, else 0 (timestamps since the epoch).
int64_t BaseNs(const Json& j) {
  auto it = j.find("baseTimeNanoseconds");
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

void ShiftEvents(Json& events, double shift_us) {
  if (shift_us == 0) return;
  for (Json& e : events) {
    auto ts = e.find("ts");
    if (ts != e.end() && ts->is_number()) *ts = ts->get<double>() + shift_us;
  }
}

// With several traces, each gets its own processes: Kineto numbers a GPU's process by its device,
// so every rank's "GPU 0" would fall into one. Trace i's pids move up by i << 22 (above Linux's
// largest pid), and its process names say its rank (distributedInfo's, else its place).
void OwnProcesses(Json& events, size_t i, const Json& trace) {
  auto rank = static_cast<int64_t>(i);
  if (auto d = trace.find("distributedInfo"); d != trace.end() && d->is_object()) {
    if (auto r = d->find("rank"); r != d->end() && r->is_number_integer()) rank = r->get<int64_t>();
  }
  const int64_t shift = static_cast<int64_t>(i) << 22;
  auto is = [](const Json& e, const char* key, std::string_view want) {
    auto it = e.find(key);
    return it != e.end() && it->is_string() && it->get_ref<const std::string&>() == want;
  };
  for (Json& e : events) {
    if (!e.is_object()) continue;
    auto pid = e.find("pid");
    if (pid != e.end() && pid->is_number_integer()) *pid = pid->get<int64_t>() + shift;
    auto args = e.find("args");
    if (!is(e, "ph", "M") || !is(e, "name", "process_name") || args == e.end() ||
        !args->is_object())
      continue;
    auto name = args->find("name");
    if (name != args->end() && name->is_string())
      *name = fmt::format("rank {}: {}", rank, name->get_ref<const std::string&>());
  }
}

}  // namespace

Status WriteMergedTrace(const MergeInput& in, const std::string& path) {
  Json out = Json::object();
  Json events = Json::array();
  int64_t base_ns = 0;
  bool first = true;
  for (size_t i = 0; i < in.traces.size(); ++i) {
    const std::string& path = in.traces[i];
    const int64_t offset = i < in.clock_offsets_ns.size() ? in.clock_offsets_ns[i] : 0;
    auto parsed = ParseJsonTrace(path);
    if (!parsed.ok()) {  // a cut or foreign file: the others and the counters still merge
      if (in.skipped == nullptr) return parsed.status();
      in.skipped->push_back(std::string(parsed.status().message()));
      continue;
    }
    Json& j = *parsed;
    const int64_t b = BaseNs(j);
    if (first) {
      first = false;
      base_ns = b;
      for (auto& [k, v] : j.items()) {
        if (k != "traceEvents") out[k] = v;
      }
    }
    Json& ev = j["traceEvents"];
    ShiftEvents(ev, static_cast<double>(b - base_ns - offset) * 1e-3);
    if (in.traces.size() > 1) OwnProcesses(ev, i, j);
    for (Json& e : ev) events.push_back(std::move(e));
  }
  // Counters as their own process, on the traces' base.
  const int64_t pid = 0x7fff0001;
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", pid},
                    {"tid", 0},
                    {"args", {{"name", in.process_name}}}});
  for (const CounterTrack& c : in.counters) {
    for (size_t k = 0; k < c.t_ns.size(); ++k) {
      const double ts_us =
          static_cast<double>(in.counters_origin_unix_ns + c.t_ns[k] - base_ns) * 1e-3;
      events.push_back({{"ph", "C"},
                        {"name", c.name},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", ts_us},
                        {"args", {{c.name, c.values[k]}}}});
    }
  }
  out["traceEvents"] = std::move(events);
  if (!out.contains("displayTimeUnit")) out["displayTimeUnit"] = "ms";
  return base::WriteFileAtomically(path, out.dump());
}

}  // namespace trainprof::trace
