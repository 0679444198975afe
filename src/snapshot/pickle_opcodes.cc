// The opcodes of plain data, and the reader's public face over the machine.
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "snapshot/pickle_machine.h"
#include "snapshot/pickle_reader.h"
#include "trace/byte_source.h"

namespace trainprof::snapshot {
namespace {

// Opcodes a pickle of plain data never needs and that would run or import Python code.
const char* RefusedName(uint8_t op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    default:
      return nullptr;
  }
}

// Protocol 0 and 1's text opcodes: plain data, but never in a pickle of protocol 2 or later.
bool IsTextOpcode(uint8_t op) { return std::strchr("IFLSVgp", op) != nullptr && op != 0; }

int64_t LittleEndian(std::string_view b) {
  uint64_t n = 0;
  for (size_t i = 0; i < b.size(); ++i) n |= uint64_t{static_cast<uint8_t>(b[i])} << (8 * i);
  return static_cast<int64_t>(n);
}

}  // namespace

size_t PickleReader::Machine::Avail() const {
  return stack_.size() - (marks_.empty() ? 0 : marks_.back());
}

Status PickleReader::Machine::Need(size_t n, std::string_view op) const {
  if (Avail() >= n) return Status::Ok();
  return Fail(fmt::format("{} needs {} value{} on the stack, and {} {} there", op, n,
                          n == 1 ? "" : "s", Avail(), Avail() == 1 ? "is" : "are"));
}

Status PickleReader::Machine::Scalars(uint8_t op, PickleInput& in, bool* done) {
  *done = true;
  switch (op) {
    case 'N':
      return Push(Scalar(PickleKind::kNone));
    case 0x88:
      return Push(Scalar(PickleKind::kBool, 1));
    case 0x89:
      return Push(Scalar(PickleKind::kBool, 0));
    case 'K': {
      TRAINPROF_ASSIGN_OR_RETURN(std::string_view b, in.Fixed(1));
      return Push(Scalar(PickleKind::kInt, LittleEndian(b)));
    }
    case 'M': {
      TRAINPROF_ASSIGN_OR_RETURN(std::string_view b, in.Fixed(2));
      return Push(Scalar(PickleKind::kInt, LittleEndian(b)));
    }
    case 'J': {
      TRAINPROF_ASSIGN_OR_RETURN(std::string_view b, in.Fixed(4));
      return Push(Scalar(PickleKind::kInt, static_cast<int32_t>(LittleEndian(b))));
    }
    case 0x8a:
    case 0x8b: {
      TRAINPROF_ASSIGN_OR_RETURN(std::string_view b, in.Fixed(op == 0x8a ? 1 : 4));
      int64_t n = op == 0x8a ? LittleEndian(b) : static_cast<int32_t>(LittleEndian(b));
      if (n > kMaxLength) return Fail(fmt::format("an int of {} bytes", n));
      std::string bytes;
      TRAINPROF_RETURN_IF_ERROR(in.Append(n, &bytes, fmt::format("a {}-byte int", n)));
      return PushLong(bytes);
    }
    case 'G': {
      TRAINPROF_ASSIGN_OR_RETURN(std::string_view b, in.Fixed(8));
      uint64_t u = 0;
      for (char c : b) u = (u << 8) | static_cast<uint8_t>(c);
      PickleValue v = Scalar(PickleKind::kFloat);
      v.d = std::bit_cast<double>(u);
      return Push(v);
    }
    default:
      break;
  }
  *done = false;
  return Status::Ok();
}

Status PickleReader::Machine::Strings(uint8_t op, PickleInput& in, bool* done) {
  *done = true;
  size_t width = 0;
  PickleKind kind = PickleKind::kStr;
  switch (op) {
    case 0x8c:
      width = 1;
      break;
    case 'X':
      width = 4;
      break;
    case 0x8d:
      width = 8;
      break;
    case 'U':
      width = 1;
      break;
    case 'T':
      width = 4;
      break;
    case 'C':
      width = 1, kind = PickleKind::kBytes;
      break;
    case 'B':
      width = 4, kind = PickleKind::kBytes;
      break;
    case 0x8e:
    case 0x96:
      width = 8, kind = PickleKind::kBytes;
      break;
    default:
      *done = false;
      return Status::Ok();
  }
  TRAINPROF_ASSIGN_OR_RETURN(int64_t n, LengthField(in, width));
  return PushString(in, n, kind);
}

Status PickleReader::Machine::Containers(uint8_t op, bool* done) {
  *done = true;
  switch (op) {
    case ']':
    case 0x8f:
      return NewAndPush(PickleKind::kList);
    case '}':
      return NewAndPush(PickleKind::kDict);
    case ')':
      return Tuple(stack_.size());
    case 0x85:
    case 0x86:
    case 0x87: {
      const size_t n = op - 0x84;
      TRAINPROF_RETURN_IF_ERROR(Need(n, "TUPLE1/2/3"));
      return Tuple(stack_.size() - n);
    }
    case 't': {
      TRAINPROF_ASSIGN_OR_RETURN(size_t m, PopMark());
      return Tuple(m);
    }
    case 'l':
    case 'd':
    case 0x91: {  // LIST, DICT, FROZENSET: a new container of the marked items
      TRAINPROF_ASSIGN_OR_RETURN(size_t m, PopMark());
      std::vector<PickleValue> items(stack_.begin() + m, stack_.end());
      stack_.resize(m);
      TRAINPROF_ASSIGN_OR_RETURN(PickleValue c,
                                 NewContainer(op == 'd' ? PickleKind::kDict : PickleKind::kList));
      for (const PickleValue& v : items) TRAINPROF_RETURN_IF_ERROR(Push(v));
      TRAINPROF_RETURN_IF_ERROR(AddItems(c, m));
      return Push(c);
    }
    case 'a':
      TRAINPROF_RETURN_IF_ERROR(Need(2, "APPEND"));
      return AddItems(stack_[stack_.size() - 2], stack_.size() - 1);
    case 's':
      TRAINPROF_RETURN_IF_ERROR(Need(3, "SETITEM"));
      return AddItems(stack_[stack_.size() - 3], stack_.size() - 2);
    case 'e':
    case 'u':
    case 0x90: {  // APPENDS, SETITEMS, ADDITEMS
      TRAINPROF_ASSIGN_OR_RETURN(size_t m, PopMark());
      if (m == 0 || Avail() < stack_.size() - m + 1)
        return Fail("APPENDS/SETITEMS with no container before its MARK");
      return AddItems(stack_[m - 1], m);
    }
    default:
      break;
  }
  *done = false;
  return Status::Ok();
}

Status PickleReader::Machine::NewAndPush(PickleKind k) {
  TRAINPROF_ASSIGN_OR_RETURN(PickleValue c, NewContainer(k));
  return Push(c);
}

Status PickleReader::Machine::StackOps(uint8_t op, PickleInput& in, bool* done) {
  *done = true;
  switch (op) {
    case '(':
      if (marks_.size() >= kMaxStack) return Fail("too many open MARKs");
      marks_.push_back(stack_.size());
      return Status::Ok();
    case '0':
      if (Avail() == 0 && !marks_.empty()) {
        marks_.pop_back();
        return Status::Ok();
      }
      return Pop("POP").status();
    case '1': {
      TRAINPROF_ASSIGN_OR_RETURN(size_t m, PopMark());
      stack_.resize(m);
      return Status::Ok();
    }
    case '2': {
      TRAINPROF_RETURN_IF_ERROR(Need(1, "DUP"));
      const PickleValue v = stack_.back();
      if (v.IsContainer()) containers_[v.ref].shared = true;
      return Push(v);
    }
    case 0x94:
      return Put(static_cast<int64_t>(memo_.size() + memo_far_.size()));
    case 'q':
    case 'r':
    case 'h':
    case 'j': {
      TRAINPROF_ASSIGN_OR_RETURN(std::string_view b, in.Fixed(op == 'q' || op == 'h' ? 1 : 4));
      const int64_t slot = LittleEndian(b);
      return op == 'q' || op == 'r' ? Put(slot) : Get(slot);
    }
    case 0x95:  // FRAME: a length hint for buffering; the reader streams anyway
      return in.Fixed(8).status();
    default:
      break;
  }
  *done = false;
  return Status::Ok();
}

Status PickleReader::Machine::Step(uint8_t op, PickleInput& in) {
  if (const char* refused = RefusedName(op)) {
    return Fail(fmt::format(
        "opcode {} (0x{:02x}) refused: the pickle names or calls Python objects; trainprof "
        "reads plain data only and runs nothing",
        refused, op));
  }
  if (op == 0x80) {
    TRAINPROF_ASSIGN_OR_RETURN(std::string_view b, in.Fixed(1));
    const int proto = static_cast<uint8_t>(b[0]);
    if (proto < 2 || proto > 5)
      return Fail(fmt::format("pickle protocol {} (2 to 5 are read)", proto));
    return Status::Ok();
  }
  bool done = false;
  TRAINPROF_RETURN_IF_ERROR(Scalars(op, in, &done));
  if (!done) TRAINPROF_RETURN_IF_ERROR(Strings(op, in, &done));
  if (!done) TRAINPROF_RETURN_IF_ERROR(Containers(op, &done));
  if (!done) TRAINPROF_RETURN_IF_ERROR(StackOps(op, in, &done));
  if (done) return Status::Ok();
  if (IsTextOpcode(op)) {
    return Fail(fmt::format(
        "opcode '{}' of pickle protocol 0/1, which trainprof does not read (protocols 2-5)",
        static_cast<char>(op)));
  }
  return Fail(fmt::format("unknown opcode 0x{:02x}", op));
}

StatusOr<PickleValue> PickleReader::Machine::Run(PickleInput& in) {
  const std::string prefix = in.name() + ": byte ";
  for (bool first = true;; first = false) {
    const int64_t at = in.offset();
    in.set_opcode_offset(at);
    StatusOr<uint8_t> op = in.Byte();
    if (!op.ok()) return op.status();
    if (first && *op != 0x80) {
      return in.Error(at, "not a pickle of protocol 2 or later (it does not start with 0x80)");
    }
    Status s = *op == '.' ? Need(1, "STOP") : Step(*op, in);
    offset = in.offset();
    if (!s.ok()) {
      if (s.message().compare(0, prefix.size(), prefix) == 0) return s;
      Status placed = in.Error(at, s.message());
      return Status(s.code(), placed.message());
    }
    if (*op == '.') return stack_.back();
  }
}

void PickleReader::Machine::Release(const PickleValue& v, int depth) {
  if (!v.IsContainer() || depth > kMaxDepth + 1) return;
  Container& c = containers_[v.ref];
  if (c.shared || c.free) return;
  for (const PickleValue& item : c.items) Release(item, depth + 1);
  if (c.memo_slot >= 0) {
    PickleValue* slot = nullptr;
    if (static_cast<size_t>(c.memo_slot) < memo_.size()) {
      slot = &memo_[c.memo_slot];
    } else if (auto it = memo_far_.find(c.memo_slot); it != memo_far_.end()) {
      slot = &it->second;
    }
    if (slot != nullptr && slot->IsContainer() && slot->ref == v.ref) {
      *slot = Scalar(PickleKind::kToken);
      slot->ref = kGoneToken;
    }
  }
  std::vector<PickleValue>().swap(c.items);
  c.free = true;
  free_.push_back(v.ref);
}

void PickleReader::Machine::Replace(const PickleValue& v, uint32_t token) {
  if (!v.IsContainer()) return;
  Container& c = containers_[v.ref];
  if (c.memo_slot < 0) return;
  PickleValue t = Scalar(PickleKind::kToken);
  t.ref = token;
  if (static_cast<size_t>(c.memo_slot) < memo_.size()) {
    memo_[c.memo_slot] = t;
  } else {
    memo_far_[c.memo_slot] = t;
  }
  c.memo_slot = -1;
}

// ---- PickleReader ------------------------------------------------------------------------------

PickleReader::PickleReader() : m_(std::make_unique<Machine>()) {}
PickleReader::~PickleReader() = default;

void PickleReader::StreamItems(std::string path, Sink sink) {
  m_->StreamItems(std::move(path), std::move(sink));
}

StatusOr<PickleValue> PickleReader::Read(trace::ByteSource* src, int64_t size,
                                         const std::string& name) {
  PickleInput in(src, size, name);
  return m_->Run(in);
}

StatusOr<PickleValue> PickleReader::ReadFile(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(std::unique_ptr<trace::ByteSource> src,
                             trace::OpenTraceBytes(path, /*inflate_ahead=*/false));
  char magic[2] = {0, 0};
  std::ifstream(path, std::ios::binary).read(magic, 2);
  const bool gzip =
      static_cast<uint8_t>(magic[0]) == 0x1f && static_cast<uint8_t>(magic[1]) == 0x8b;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return Read(src.get(), gzip || ec ? -1 : static_cast<int64_t>(size), path);
}

StatusOr<PickleValue> PickleReader::ReadBytes(std::string_view bytes, const std::string& name) {
  std::unique_ptr<trace::ByteSource> src = trace::MemoryTraceBytes(bytes, name);
  return Read(src.get(), static_cast<int64_t>(bytes.size()), name);
}

std::string_view PickleReader::Str(const PickleValue& v) const { return m_->Str(v); }

const std::vector<PickleValue>& PickleReader::Items(const PickleValue& v) const {
  return m_->Items(v);
}

const PickleValue* PickleReader::Find(const PickleValue& dict, std::string_view key) const {
  if (dict.kind != PickleKind::kDict) return nullptr;
  const std::vector<PickleValue>& items = m_->Items(dict);
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i].kind == PickleKind::kStr && m_->Str(items[i]) == key) return &items[i + 1];
  return nullptr;
}

int64_t PickleReader::Int(const PickleValue* v, int64_t fallback) const {
  if (v == nullptr) return fallback;
  switch (v->kind) {
    case PickleKind::kInt:
    case PickleKind::kUInt:
    case PickleKind::kBool:
      return v->i;
    case PickleKind::kFloat:
    case PickleKind::kBigInt:
      return std::abs(v->d) < 9.2e18 ? static_cast<int64_t>(v->d) : fallback;
    default:
      return fallback;
  }
}

void PickleReader::Release(const PickleValue& v) { m_->Release(v, 0); }
void PickleReader::Replace(const PickleValue& c, uint32_t token) { m_->Replace(c, token); }
int64_t PickleReader::offset() const { return m_->offset; }
size_t PickleReader::live_containers() const { return m_->live(); }

}  // namespace trainprof::snapshot
