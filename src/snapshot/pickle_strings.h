// Interned strings of the pickle reader: each distinct text is kept once and named by an id, so a
// file name repeated in a million stack frames costs 4 bytes a use.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace trainprof::snapshot {

class StringTable {
 public:
  uint32_t Intern(std::string_view s) {
    if (auto it = ids_.find(s); it != ids_.end()) return it->second;
    texts_.emplace_back(s);
    const uint32_t id = static_cast<uint32_t>(texts_.size() - 1);
    ids_.emplace(texts_.back(), id);
    return id;
  }
  std::string_view Get(uint32_t id) const {
    if (id >= texts_.size()) return {};
    return texts_[id];
  }
  size_t size() const { return texts_.size(); }

 private:
  std::deque<std::string> texts_;  // deque: views into them stay valid
  std::unordered_map<std::string_view, uint32_t> ids_;
};

}  // namespace trainprof::snapshot
