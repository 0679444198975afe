#include "report/tensorboard_export.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "base/atomic_file.h"
#include "report/format.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

// --- The protobuf wire format, as much of it as tensorflow.Event needs. ---

enum class Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutKey(std::string& out, int field, Wire wire) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(wire));
}

void PutLittleEndian(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void PutBytes(std::string& out, int field, std::string_view bytes) {
  PutKey(out, field, Wire::kBytes);
  PutVarint(out, bytes.size());
  out.append(bytes);
}

void PutDouble(std::string& out, int field, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  PutKey(out, field, Wire::kFixed64);
  PutLittleEndian(out, bits, 8);
}

void PutFloat(std::string& out, int field, float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  PutKey(out, field, Wire::kFixed32);
  PutLittleEndian(out, bits, 4);
}

void PutInt64(std::string& out, int field, int64_t v) {
  PutKey(out, field, Wire::kVarint);
  PutVarint(out, static_cast<uint64_t>(v));
}

// --- tensorflow.Event and its Summary. ---

constexpr int kDtString = 7;  // tensorflow.DataType DT_STRING

// Summary.Value{tag = 1, simple_value = 2}.
std::string ScalarValue(std::string_view tag, double v) {
  std::string value;
  PutBytes(value, 1, tag);
  PutFloat(value, 2, static_cast<float>(v));
  return value;
}

// Summary.Value{tag = 1, tensor = 8 (a scalar DT_STRING), metadata = 9 (plugin "text")}.
std::string TextValue(std::string_view tag, std::string_view text) {
  std::string plugin_data, metadata, tensor, value;
  PutBytes(plugin_data, 1, "text");    // PluginData.plugin_name
  PutBytes(metadata, 1, plugin_data);  // SummaryMetadata.plugin_data
  PutInt64(tensor, 1, kDtString);      // TensorProto.dtype
  PutBytes(tensor, 2, "");             // TensorProto.tensor_shape: no dims, a scalar
  PutBytes(tensor, 8, text);           // TensorProto.string_val
  PutBytes(value, 1, tag);
  PutBytes(value, 8, tensor);
  PutBytes(value, 9, metadata);
  return value;
}

// The events of one file, each framed as a TFRecord.
class EventFile {
 public:
  // Event{wall_time = 1, step = 2, file_version = 3}.
  void AddFileVersion(double wall_time) {
    std::string event;
    PutDouble(event, 1, wall_time);
    PutInt64(event, 2, 0);
    PutBytes(event, 3, "brain.Event:2");
    AddRecord(event);
  }
  // Event{wall_time = 1, step = 2, summary = 5}; `values` are serialized Summary.Values.
  void AddSummary(double wall_time, int64_t step, const std::vector<std::string>& values) {
    if (values.empty()) return;
    std::string summary, event;
    for (const std::string& v : values) PutBytes(summary, 1, v);  // Summary.value
    PutDouble(event, 1, wall_time);
    PutInt64(event, 2, step);
    PutBytes(event, 5, summary);
    AddRecord(event);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  // uint64 length, masked CRC of the length, the data, masked CRC of the data; little endian.
  void AddRecord(std::string_view data) {
    std::string length;
    PutLittleEndian(length, data.size(), 8);
    bytes_ += length;
    PutLittleEndian(bytes_, MaskCrc32c(Crc32c(length)), 4);
    bytes_.append(data);
    PutLittleEndian(bytes_, MaskCrc32c(Crc32c(data)), 4);
  }
  std::string bytes_;
};

// --- What a report holds, as events. ---

// The cell of `row` in column `c` (-1: none), or an empty value when there is none.
const Value& CellAt(const std::vector<Value>& row, int c) {
  static const Value kNone;
  return c >= 0 && static_cast<size_t>(c) < row.size() ? row[static_cast<size_t>(c)] : kNone;
}

double NumberAt(const std::vector<Value>& row, int c) { return AsNumber(CellAt(row, c)); }

bool IsNumericValue(const Value& v) {
  return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
}

// Every numeric headline metric as <section>/<key>, at step 0.
void AddMetrics(const Report& r, double start, EventFile& file) {
  std::vector<std::string> values;
  for (const Section& s : r.sections) {
    for (const Metric& m : s.metrics) {
      if (IsNumericValue(m.value))
        values.push_back(ScalarValue(s.id + "/" + m.key, AsNumber(m.value)));
    }
  }
  file.AddSummary(start, 0, values);
}

// speed.<stage>_rate: <stage>_rate (samples/s) and <stage>_step_time_s per step; a pooled
// report's `repeat` column makes one curve per repeat (.../repeat<N>), as steps restart.
void AddRateCurves(const Report& r, const std::string& stage, double start, EventFile& file) {
  const Table* t = r.FindTable("speed", stage + "_rate");
  if (t == nullptr) return;
  const int step = t->ColumnIndex("step"), time = t->ColumnIndex("time_s"),
            batches = t->ColumnIndex("batches_per_s"), samples = t->ColumnIndex("samples_per_s"),
            repeat = t->ColumnIndex("repeat");
  for (size_t i = 0; i < t->rows.size(); ++i) {
    const auto& row = t->rows[i];
    const double n = NumberAt(row, step), rep = NumberAt(row, repeat), at = NumberAt(row, time);
    const std::string suffix =
        !std::isfinite(rep) ? "" : fmt::format("/repeat{}", std::llround(rep));
    std::vector<std::string> values;
    if (const double v = NumberAt(row, samples); std::isfinite(v))
      values.push_back(ScalarValue(stage + "_rate" + suffix, v));
    if (const double v = NumberAt(row, batches); v > 0 && std::isfinite(v))
      values.push_back(ScalarValue(stage + "_step_time_s" + suffix, 1.0 / v));
    const double wall = std::isfinite(at) ? start + at : start;
    file.AddSummary(wall, std::isfinite(n) ? std::llround(n) : static_cast<int64_t>(i), values);
  }
}

// The step number of an analyze step name ("ProfilerStep#1009" -> 1009), or `fallback`.
int64_t StepNumber(const Value& v, int64_t fallback) {
  if (IsNumericValue(v)) return std::isfinite(AsNumber(v)) ? std::llround(AsNumber(v)) : fallback;
  const std::string name = FormatMachine(v);
  const size_t digits = name.find_last_not_of("0123456789");
  const size_t from = digits == std::string::npos ? 0 : digits + 1;
  if (from >= name.size() || name.size() - from > 18) return fallback;
  return std::stoll(name.substr(from));
}

// A step_breakdown column's tag: step_time_s, and its parts as step_breakdown/<column>; "" for
// the rank and step columns.
std::string StepTag(const std::string& key) {
  if (key == "rank" || key == "step") return "";
  return key == "step_time_s" ? key : "step_breakdown/" + key;
}

// A step_breakdown row's values, each tag after `prefix`.
std::vector<std::string> StepValues(const Table& t, const std::vector<Value>& row,
                                    const std::string& prefix) {
  std::vector<std::string> values;
  for (size_t c = 0; c < t.columns.size() && c < row.size(); ++c) {
    const std::string tag = StepTag(t.columns[c].key);
    if (!tag.empty() && IsNumericValue(row[c]))
      values.push_back(ScalarValue(prefix + tag, AsNumber(row[c])));
  }
  return values;
}

// Up to this many ranks, an analyze run's step times are a curve per rank and figure
// (rank<r>/...); with more, one curve per figure, its mean over the ranks at each step
// (ranks_mean/...): ten thousand ranks make a dozen curves, not a hundred thousand.
constexpr size_t kMaxRankCurves = 8;

void AddMeanStepTimes(const Table& t, int rank, int step, double start, EventFile& file) {
  std::map<std::string, int64_t> rows_of_rank;
  std::map<int64_t, std::vector<std::pair<double, int64_t>>> sums;  // step -> per column
  t.ForEachRowBlock([&](const std::vector<std::vector<Value>>& rows) {
    for (const auto& row : rows) {
      const int64_t n =
          StepNumber(CellAt(row, step), rows_of_rank[FormatMachine(CellAt(row, rank))]++);
      auto& sum = sums[n];
      sum.resize(t.columns.size());
      for (size_t c = 0; c < t.columns.size() && c < row.size(); ++c)
        if (IsNumericValue(row[c])) sum[c].first += AsNumber(row[c]), ++sum[c].second;
    }
  });
  for (const auto& [n, sum] : sums) {
    std::vector<std::string> values;
    for (size_t c = 0; c < sum.size(); ++c) {
      const std::string tag = StepTag(t.columns[c].key);
      if (!tag.empty() && sum[c].second > 0)
        values.push_back(ScalarValue("ranks_mean/" + tag, sum[c].first / sum[c].second));
    }
    file.AddSummary(start, n, values);
  }
}

// overview.step_breakdown of an analyze report, per step (the number in "ProfilerStep#1009");
// with several ranks, each rank's under rank<r>/, with more than kMaxRankCurves their mean. Many
// ranks' table is in its CSV only: its rows are read block by block from its source.
void AddStepTimes(const Report& r, double start, EventFile& file) {
  const Table* t = r.FindTable("overview", "step_breakdown");
  if (t == nullptr) return;
  const int rank = t->ColumnIndex("rank"), step = t->ColumnIndex("step");
  std::map<std::string, int64_t> rows_of_rank;
  t->ForEachRowBlock([&](const std::vector<std::vector<Value>>& rows) {
    for (const auto& row : rows) rows_of_rank[FormatMachine(CellAt(row, rank))] = 0;
  });
  if (rows_of_rank.size() > kMaxRankCurves) return AddMeanStepTimes(*t, rank, step, start, file);
  const bool several = rows_of_rank.size() > 1;
  t->ForEachRowBlock([&](const std::vector<std::vector<Value>>& rows) {
    for (const auto& row : rows) {
      const std::string rk = FormatMachine(CellAt(row, rank));
      const int64_t n = StepNumber(CellAt(row, step), rows_of_rank[rk]++);
      file.AddSummary(start, n, StepValues(*t, row, several ? "rank" + rk + "/" : ""));
    }
  });
}

// system.system_timeseries: each numeric column but time_s as system/<column>, step = row.
void AddSystemSeries(const Report& r, double start, EventFile& file) {
  const Table* t = r.FindTable("system", "system_timeseries");
  if (t == nullptr) return;
  const int time = t->ColumnIndex("time_s");
  for (size_t i = 0; i < t->rows.size(); ++i) {
    const auto& row = t->rows[i];
    std::vector<std::string> values;
    for (size_t c = 0; c < t->columns.size() && c < row.size(); ++c) {
      if (static_cast<int>(c) == time || !IsNumericValue(row[c])) continue;
      values.push_back(ScalarValue("system/" + t->columns[c].key, AsNumber(row[c])));
    }
    const double at = NumberAt(row, time);
    file.AddSummary(std::isfinite(at) ? start + at : start, static_cast<int64_t>(i), values);
  }
}

// `text` as a Markdown code block, its fence longer than any run of backticks inside.
std::string CodeBlock(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) longest = std::max(longest, run = c == '`' ? run + 1 : 0);
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  return fence + "\n" + text + (text.ends_with('\n') ? "" : "\n") + fence + "\n";
}

// summary.txt of the run folder as the text panel "summary"; none when the file is not there.
Status AddSummaryText(const std::string& run_dir, double start, EventFile& file) {
  if (run_dir.empty()) return Status::Ok();
  const std::string path = (fs::path(run_dir) / "summary.txt").string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::Ok();
  TRAINPROF_ASSIGN_OR_RETURN(std::string text, base::ReadFile(path, "summary"));
  file.AddSummary(start, 0, {TextValue("summary", CodeBlock(text))});
  return Status::Ok();
}

double NowSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string EventFileName() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0 || host[0] == '\0')
    std::strcpy(host.data(), "localhost");
  std::string name = host.data();
  for (char& c : name)
    if (c == '/') c = '_';
  return fmt::format("events.out.tfevents.{}.{}.{}.trainprof", static_cast<int64_t>(NowSeconds()),
                     name, getpid());
}

}  // namespace

uint32_t Crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      table[i] = c;
    }
    return table;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (char ch : data) crc = kTable[(crc ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

StatusOr<std::unique_ptr<TensorBoardStream>> TensorBoardStream::Open(const std::string& logdir) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) return PermissionDenied(fmt::format("{}: cannot create: {}", logdir, ec.message()));
  auto s = std::unique_ptr<TensorBoardStream>(new TensorBoardStream());
  s->path_ = logdir + "/" + EventFileName() + "-live";
  s->file_ = std::fopen(s->path_.c_str(), "wb");
  if (s->file_ == nullptr)
    return PermissionDenied(fmt::format("{}: cannot write: {}", s->path_, std::strerror(errno)));
  EventFile first;
  first.AddFileVersion(NowSeconds());
  std::fwrite(first.bytes().data(), 1, first.bytes().size(), s->file_);
  std::fflush(s->file_);
  return s;
}

Status TensorBoardStream::Add(int64_t step,
                              const std::vector<std::pair<std::string, double>>& scalars) {
  std::vector<std::string> values;
  for (const auto& [tag, v] : scalars) values.push_back(ScalarValue(tag, v));
  EventFile e;
  e.AddSummary(NowSeconds(), step, values);
  if (std::fwrite(e.bytes().data(), 1, e.bytes().size(), file_) != e.bytes().size() ||
      std::fflush(file_) != 0)
    return PermissionDenied(fmt::format("{}: cannot write", path_));
  return Status::Ok();
}

TensorBoardStream::~TensorBoardStream() {
  if (file_ != nullptr) std::fclose(file_);
}

std::optional<double> ParseUtcIso8601(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, consumed = 0;
  const std::string str(text);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) !=
          6 ||
      consumed != 19)
    return std::nullopt;
  using namespace std::chrono;
  const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                            day{static_cast<unsigned>(d)}};
  if (!date.ok() || h > 23 || mi > 59 || s > 60) return std::nullopt;
  double seconds =
      static_cast<double>(sys_days{date}.time_since_epoch() / std::chrono::seconds(1)) +
      h * 3600.0 + mi * 60.0 + s;
  std::string_view rest = text.substr(19);
  if (rest.starts_with('.')) {
    size_t n = 1;
    double scale = 0.1;
    for (; n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n])); ++n, scale /= 10)
      seconds += (rest[n] - '0') * scale;
    rest.remove_prefix(n);
  }
  if (rest == "Z" || rest == "+00:00") return seconds;
  int oh = 0, om = 0;
  if (rest.size() != 6 || (rest[0] != '+' && rest[0] != '-') ||
      std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &oh, &om) != 2)
    return std::nullopt;
  return seconds - (rest[0] == '+' ? 1 : -1) * (oh * 3600.0 + om * 60.0);
}

Status WriteTensorBoardEvents(const Report& r, const std::string& run_dir,
                              const std::string& logdir) {
  const double start = ParseUtcIso8601(MetaText(r, "created_utc")).value_or(NowSeconds());
  EventFile file;
  file.AddFileVersion(start);
  AddMetrics(r, start, file);
  AddRateCurves(r, "training", start, file);
  AddRateCurves(r, "validation", start, file);
  AddStepTimes(r, start, file);
  AddSystemSeries(r, start, file);
  TRAINPROF_RETURN_IF_ERROR(AddSummaryText(run_dir, start, file));
  std::error_code ec;
  fs::create_directories(logdir, ec);
  if (ec || !fs::is_directory(logdir)) {
    return PermissionDenied(fmt::format("cannot create TensorBoard log folder {}: {}", logdir,
                                        ec ? ec.message() : "not a folder"));
  }
  return base::WriteFileAtomically((fs::path(logdir) / EventFileName()).string(), file.bytes());
}

Status ExportToTensorBoard(const RunFiles& f) {
  return WriteTensorBoardEvents(f.report, f.dir, f.output.tensorboard);
}

}  // namespace trainprof::report
