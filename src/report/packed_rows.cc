#include "report/packed_rows.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace trainprof::report {
namespace {

// A block is its rows, each its value count (4 bytes) and its values. A value as bytes: its type
// (the variant's index), then an int64 or double as its 8 bytes, a bool as one, a string as its
// length (8 bytes) and its bytes.
void PutValue(const Value& v, std::string& out) {
  out.push_back(static_cast<char>(v.index()));
  if (const auto* i = std::get_if<int64_t>(&v)) {
    out.append(reinterpret_cast<const char*>(i), sizeof *i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    out.append(reinterpret_cast<const char*>(d), sizeof *d);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    const uint64_t n = s->size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += *s;
  } else if (const auto* b = std::get_if<bool>(&v)) {
    out.push_back(*b ? 1 : 0);
  }
}

template <typename T>
T Take(const std::string& in, size_t& pos) {
  T x;
  std::memcpy(&x, in.data() + pos, sizeof x);
  pos += sizeof x;
  return x;
}

// The value PutValue wrote at `pos`; `pos` moves past it.
Value TakeValue(const std::string& in, size_t& pos) {
  switch (static_cast<size_t>(in[pos++])) {
    case 1:
      return Take<int64_t>(in, pos);
    case 2:
      return Take<double>(in, pos);
    case 3: {
      const auto n = static_cast<size_t>(Take<uint64_t>(in, pos));
      std::string s = in.substr(pos, n);
      pos += n;
      return s;
    }
    case 4:
      return in[pos++] != 0;
    default:
      return Value{};
  }
}

class PackedRows : public RowSource {
 public:
  explicit PackedRows(std::vector<std::vector<Value>>& rows) {
    for (size_t r = 0; r < rows.size(); ++r) {
      if (r % kPackedBlockRows == 0) blocks_.emplace_back(), counts_.push_back(0);
      const auto n = static_cast<uint32_t>(rows[r].size());
      blocks_.back().append(reinterpret_cast<const char*>(&n), sizeof n);
      for (const Value& v : rows[r]) PutValue(v, blocks_.back());
      ++counts_.back();
      std::vector<Value>().swap(rows[r]);  // each row's memory goes as it is packed
    }
    for (std::string& b : blocks_) b.shrink_to_fit();
  }
  size_t parts() const override { return blocks_.size(); }
  void AppendRows(size_t part, std::vector<std::vector<Value>>& rows) const override {
    size_t pos = 0;
    for (size_t r = 0; r < counts_[part]; ++r) {
      const auto n = Take<uint32_t>(blocks_[part], pos);
      std::vector<Value>& row = rows.emplace_back();
      row.reserve(n);
      for (uint32_t c = 0; c < n; ++c) row.push_back(TakeValue(blocks_[part], pos));
    }
  }

 private:
  std::vector<std::string> blocks_;
  std::vector<size_t> counts_;  // rows per block
};

}  // namespace

void PackRows(Table& t) {
  if (!t.csv_only || t.source != nullptr || t.rows.empty()) return;
  t.source = std::make_shared<PackedRows>(t.rows);
  std::vector<std::vector<Value>>().swap(t.rows);
}

}  // namespace trainprof::report
