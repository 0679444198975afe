#include "report/packed_rows.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/bytes.h"

namespace trainprof::report {
namespace {

// A block is its rows, each its value count (4 bytes) and its values. A value as bytes: its type
// (the variant's index), then an int64 or double as its 8 bytes, a bool as one, a string as its
// length (8 bytes) and its bytes.
void PutValue(const Value& v, std::string& out) {
  out.push_back(static_cast<char>(v.index()));
  if (const auto* i = std::get_if<int64_t>(&v)) {
    base::PutRaw(out, *i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    base::PutRaw(out, *d);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    base::PutText(out, *s);
  } else if (const auto* b = std::get_if<bool>(&v)) {
    out.push_back(*b ? 1 : 0);
  }
}

// The value PutValue wrote next in `in`.
Value TakeValue(base::ByteReader& in) {
  switch (in.Raw<char>()) {
    case 1:
      return in.Raw<int64_t>();
    case 2:
      return in.Raw<double>();
    case 3:
      return in.Text();
    case 4:
      return in.Raw<char>() != 0;
    default:
      return Value{};
  }
}

class PackedRows : public RowSource {
 public:
  explicit PackedRows(std::vector<std::vector<Value>>& rows) {
    for (size_t r = 0; r < rows.size(); ++r) {
      if (r % kPackedBlockRows == 0) blocks_.emplace_back(), counts_.push_back(0);
      base::PutRaw(blocks_.back(), static_cast<uint32_t>(rows[r].size()));
      for (const Value& v : rows[r]) PutValue(v, blocks_.back());
      ++counts_.back();
      std::vector<Value>().swap(rows[r]);  // each row's memory goes as it is packed
    }
    for (std::string& b : blocks_) b.shrink_to_fit();
  }
  size_t parts() const override { return blocks_.size(); }
  void AppendRows(size_t part, std::vector<std::vector<Value>>& rows) const override {
    base::ByteReader in{blocks_[part]};
    for (size_t r = 0; r < counts_[part]; ++r) {
      const auto n = in.Raw<uint32_t>();
      std::vector<Value>& row = rows.emplace_back();
      row.reserve(n);
      for (uint32_t c = 0; c < n; ++c) row.push_back(TakeValue(in));
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
