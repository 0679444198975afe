#include "snapshot/torch_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <map>

#include "snapshot/snapshot_section.h"
#include "trace/byte_source.h"

namespace trainprof::snapshot {
namespace {

struct Row {
  int64_t time = 0, action = 0, bytes = 0, category = 0;
};

// A strict reader of "[[t, a, b, c], ...]": integers only, as PyTorch writes them.
class Rows {
 public:
  Rows(std::string_view s, const std::string& name) : s_(s), name_(name) {}

  StatusOr<std::vector<Row>> Read() {
    std::vector<Row> out;
    if (!Expect('[')) return Bad("expected '[' (a list of [time, action, bytes, category])");
    if (Peek() == ']') return out;
    for (;;) {
      Row r;
      if (!Expect('[') || !Int(r.time) || !Expect(',') || !Int(r.action) || !Expect(',') ||
          !Int(r.bytes) || !Expect(',') || !Int(r.category) || !Expect(']'))
        return Bad("expected a row [time, action, bytes, category] of integers");
      if (r.category < 0 || r.category >= memory::kRoles)
        return Bad(fmt::format("category {} is not one of PyTorch's 0-7", r.category));
      out.push_back(r);
      if (Expect(']')) return out;
      if (!Expect(',')) return Bad("expected ',' or ']' after a row");
    }
  }

 private:
  char Peek() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  bool Expect(char c) {
    if (Peek() != c) return false;
    ++i_;
    return true;
  }
  bool Int(int64_t& v) {
    Peek();
    const char* begin = s_.data() + i_;
    char* end = nullptr;
    const std::string digits(begin, std::min<size_t>(24, s_.size() - i_));
    v = std::strtoll(digits.c_str(), &end, 10);
    const size_t used = static_cast<size_t>(end - digits.c_str());
    i_ += used;
    return used > 0;
  }
  Status Bad(const std::string& why) const {
    return InvalidArgument(fmt::format("{}: byte {}: {}", name_, i_, why));
  }
  std::string_view s_;
  const std::string& name_;
  size_t i_ = 0;
};

// The rows as the allocation log: a block per positive row, freed by the latest open block of
// its category and size (PyTorch writes no addresses); rows at time -1 existed before.
memory::AllocationLog LogOf(const std::vector<Row>& rows, std::vector<CurvePoint>& curve) {
  memory::AllocationLog log;
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> open;  // (category, bytes)
  int64_t allocated = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const auto seq = static_cast<int64_t>(i);
    const auto role = static_cast<memory::Role>(r.category);
    allocated += r.bytes;
    if (r.time >= 0) curve.push_back({r.time, allocated, 0});
    if (r.bytes > 0) {
      open[{r.category, r.bytes}].push_back(log.blocks.size());
      const bool before = r.time < 0;
      log.blocks.push_back({.bytes = r.bytes,
                            .alloc_seq = before ? memory::kBefore : seq,
                            .alloc_time = before ? memory::kBefore : r.time,
                            .role = role,
                            .rule = memory::kTorchCategory});
      continue;
    }
    std::vector<size_t>& stack = open[{r.category, -r.bytes}];
    if (stack.empty()) {
      log.blocks.push_back({.bytes = -r.bytes,
                            .free_seq = seq,
                            .free_time = r.time,
                            .role = role,
                            .rule = memory::kTorchCategory});
      continue;
    }
    log.blocks[stack.back()].free_seq = seq;
    log.blocks[stack.back()].free_time = r.time;
    stack.pop_back();
  }
  return log;
}

}  // namespace

StatusOr<DeviceMemory> ReadTorchTimelineBytes(std::string_view bytes, const std::string& name) {
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<Row> rows, Rows(bytes, name).Read());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.time < b.time; });
  DeviceMemory d;
  d.events = static_cast<int64_t>(rows.size());
  std::vector<CurvePoint> curve;
  memory::AllocationLog log = LogOf(rows, curve);
  const int64_t t0 = curve.empty() ? 0 : curve.front().time_us;
  int64_t peak = -1;
  int64_t running = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    running += rows[i].bytes;
    if (peak < 0 || running > d.peak_allocated) {
      d.peak_allocated = running;
      d.peak_time_us = std::max<int64_t>(0, rows[i].time - t0) / 1000;
      peak = static_cast<int64_t>(i);
    }
  }
  d.first_us = 0;
  d.last_us = curve.empty() ? 0 : (curve.back().time_us - t0) / 1000;
  d.roles.inferred = true;
  d.roles.at_peak = memory::RolesAt(log, 0, peak);
  d.roles.rules = memory::RulesAt(log, 0, peak);
  for (memory::RolePoint p : memory::RoleTimeline(log, 0, peak, 400)) {
    p.time = (p.time - t0) / 1000;  // ns -> µs, as snapshots count
    d.roles.timeline.push_back(p);
  }
  return d;
}

StatusOr<DeviceMemory> ReadTorchTimeline(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(auto src, trace::OpenTraceBytes(path, false));
  std::string bytes;
  std::vector<char> buf(1 << 20);
  for (;;) {
    TRAINPROF_ASSIGN_OR_RETURN(size_t n, src->Read(buf.data(), buf.size()));
    if (n == 0) break;
    bytes.append(buf.data(), n);
  }
  if (src->cut_short())
    return InvalidArgument(fmt::format("{}: the gzip stream is cut short", path));
  return ReadTorchTimelineBytes(bytes, path);
}

void AddTorchTimelineSections(const std::string& path, const DeviceMemory& d, report::Report& r) {
  report::Section& s = r.AddSection("snapshot", fmt::format("PyTorch memory timeline: {}", path));
  s.AddMetric("events", "Events", d.events, report::Unit::kCount);
  s.AddMetric("peak_allocated_bytes", "Peak", d.peak_allocated, report::Unit::kBytes);
  s.AddMetric("peak_time_s", "At", detail::Sec(d.peak_time_us), report::Unit::kSeconds);
  s.notes.push_back(
      "PyTorch's own categories (torch.profiler's export_memory_timeline_raw), for one device: "
      "the roles below are PyTorch's, shown with the same names as trainprof's. The format has "
      "no stacks, addresses or segments: for those, record a memory snapshot "
      "(torch.cuda.memory._record_memory_history).");
  AddRoleSections(r.AddSection("snapshot_roles", "Memory by role"), {d});
}

}  // namespace trainprof::snapshot
