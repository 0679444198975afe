#include "trace/input_kind.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <span>

#include "trace/kineto/kineto_reader.h"
#include "trace/nsys/nsys_reader.h"

namespace trainprof::trace {
namespace {

// Up to kSniffBytes inflated from the start of gzip data (`raw`: its first bytes); what
// inflated before an error when the stream is corrupt.
std::string InflateHead(std::string_view raw) {
  std::string out(kSniffBytes, '\0');
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return {};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  inflate(&z, Z_SYNC_FLUSH);
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  return out;
}

// The first bytes of the file into `buf`; how many, 0 when it cannot be read. One pread, no
// stream: every input is sniffed when listed (10,000 rank files at once).
size_t ReadStart(const std::string& path, std::span<char> buf) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = 0;
  do {
    n = ::pread(fd, buf.data(), buf.size(), 0);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

bool IsGzipStart(std::string_view raw) {
  return raw.size() >= 2 && static_cast<uint8_t>(raw[0]) == 0x1f &&
         static_cast<uint8_t>(raw[1]) == 0x8b;
}

// A pickle of protocol 2 to 5: the PROTO opcode (0x80) and its version byte.
bool SniffPickle(std::string_view head) {
  return head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x80 &&
         static_cast<uint8_t>(head[1]) >= 2 && static_cast<uint8_t>(head[1]) <= 5;
}

// torch.profiler's export_memory_timeline_raw: "[[" and a number.
bool SniffTorchTimeline(std::string_view head) {
  size_t i = 0;
  auto skip = [&] {
    while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  };
  for (char c : {'[', '['}) {
    skip();
    if (i >= head.size() || head[i] != c) return false;
    ++i;
  }
  skip();
  return i < head.size() && (head[i] == '-' || std::isdigit(static_cast<unsigned char>(head[i])));
}

bool SniffRankSummary(std::string_view head) { return head.starts_with(kRankSummaryMagic); }

// An SQLite file's kinds by its header's application_id (big-endian, at byte 68): Nsight Systems
// leaves it 0; trainprof's digests set theirs; any other is another program's database.
std::optional<uint32_t> SqliteApplicationId(std::string_view head) {
  if (!SniffSqlite(head) || head.size() < 72) return std::nullopt;
  uint32_t id = 0;
  for (size_t i = 68; i < 72; ++i) id = (id << 8) | static_cast<uint8_t>(head[i]);
  return id;
}
bool SniffNsysSqlite(std::string_view head) { return SqliteApplicationId(head) == 0u; }
bool SniffRankDigest(std::string_view head) {
  return SqliteApplicationId(head) == kRankDigestApplicationId;
}
bool SniffOtherSqlite(std::string_view head) { return SqliteApplicationId(head).has_value(); }

// SQLite opens the file by its name.
StatusOr<TraceModel> ReadNsysInput(OpenedFile& file, const ReadOptions& options) {
  return ReadNsysFile(file.path(), options);
}

constexpr std::string_view kMergeReads = "trainprof merge reads it";
constexpr std::string_view kAnalyzeReads = "trainprof analyze reads it on its own";

// The memory timeline first: a Chrome trace may be a bare JSON array too ("[{"). Among SQLite
// files, Nsight's and the digests' application_ids before any other's.
constexpr std::array kFormats{
    InputFormat{InputKind::kMemoryTimeline, "PyTorch memory timeline (export_memory_timeline_raw)",
                SniffTorchTimeline, nullptr, nullptr, kAnalyzeReads},
    InputFormat{InputKind::kKinetoJson, "PyTorch profiler trace", SniffKinetoJson, ReadTraceFile},
    InputFormat{InputKind::kMemorySnapshot, "PyTorch memory snapshot", SniffPickle, nullptr,
                nullptr, kAnalyzeReads},
    InputFormat{InputKind::kNsysSqlite, "Nsight Systems SQLite export", SniffNsysSqlite,
                ReadNsysInput, NsysParts},
    InputFormat{InputKind::kRankSummary, "trainprof rank summary", SniffRankSummary, nullptr,
                nullptr, kMergeReads},
    InputFormat{InputKind::kRankDigest, "trainprof rank digest", SniffRankDigest, nullptr, nullptr,
                kMergeReads},
    InputFormat{InputKind::kOtherSqlite,
                "SQLite database of another program (its application_id is not Nsight's 0)",
                SniffOtherSqlite, nullptr, nullptr,
                "trainprof reads Nsight Systems exports and its own digests only"},
};

}  // namespace

std::span<const InputFormat> InputFormats() { return kFormats; }

bool IsNsysReport(std::string_view path) {
  return path.ends_with(".nsys-rep") || path.ends_with(".qdrep");
}

const InputFormat* FindInputFormat(InputKind kind) {
  for (const InputFormat& f : kFormats)
    if (f.kind == kind) return &f;
  return nullptr;
}

InputKind SniffHead(std::string_view head) {
  std::string inflated;  // the first decoded bytes of gzip data
  if (IsGzipStart(head)) head = inflated = InflateHead(head);
  for (const InputFormat& f : kFormats)
    if (f.sniff(head)) return f.kind;
  return InputKind::kUnknown;
}

InputKind SniffInput(const std::string& path) {
  std::array<char, kHeadBytes> raw;
  return SniffHead(std::string_view(raw.data(), ReadStart(SplitInputPart(path).first, raw)));
}

bool IsMemorySnapshot(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  return IsMemorySnapshotKind(SniffInput(path));
}

bool IsMemorySnapshotKind(InputKind k) {
  return k == InputKind::kMemorySnapshot || k == InputKind::kMemoryTimeline;
}

std::pair<std::string, std::string> SplitInputPart(const std::string& input) {
  const size_t hash = input.rfind('#');
  std::error_code ec;
  if (hash == std::string::npos || std::filesystem::exists(input, ec)) return {input, ""};
  return {input.substr(0, hash), input.substr(hash + 1)};
}

StatusOr<std::vector<std::string>> InputsOfFile(const std::string& file, InputKind kind) {
  const InputFormat* format = FindInputFormat(kind);
  if (format == nullptr || format->parts == nullptr) return std::vector<std::string>{file};
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<std::string> parts, format->parts(file));
  if (parts.empty()) return std::vector<std::string>{file};
  std::vector<std::string> out;
  for (const std::string& p : parts) out.push_back(file + "#" + p);
  return out;
}

std::vector<std::string> ExpandInputParts(std::vector<std::string> files) {
  std::vector<std::string> out;
  out.reserve(files.size());
  for (std::string& f : files) {
    StatusOr<std::vector<std::string>> inputs = InputsOfFile(f, SniffInput(f));
    if (!inputs.ok()) {  // kept whole: its error is said when it is read
      out.push_back(std::move(f));
      continue;
    }
    for (std::string& in : *inputs) out.push_back(std::move(in));
  }
  return out;
}

StatusOr<TraceModel> ReadInput(const std::string& input, const ReadOptions& options) {
  auto [path, part] = SplitInputPart(input);
  StatusOr<OpenedFile> file = OpenedFile::Open(path, kHeadBytes);
  const InputKind kind = file.ok() ? SniffHead(file->head()) : InputKind::kUnknown;
  if (kind == InputKind::kUnknown && IsNsysReport(path)) {
    return InvalidArgument(fmt::format(
        "{}: an Nsight Systems report, which only nsys reads; export it to SQLite first: nsys "
        "export --type sqlite --output {}.sqlite {}",
        path, path.substr(0, path.rfind('.')), path));
  }
  if (!file.ok()) return file.status();  // "<path>: cannot open: ...", as the Kineto reader said
  const InputFormat* f =
      FindInputFormat(kind == InputKind::kUnknown ? InputKind::kKinetoJson : kind);
  if (f->read == nullptr)
    return InvalidArgument(fmt::format("{}: a {}, not a trace ({})", path, f->name, f->read_by));
  if (part.empty()) return f->read(*file, options);
  ReadOptions o = options;
  o.part = part;
  return f->read(*file, o);
}

}  // namespace trainprof::trace
