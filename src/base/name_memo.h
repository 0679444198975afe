// The answers of a pure function of a name, kept for the life of the process: the kernel-name
// rules (Tensor Cores, category, communication) scan a name for dozens of tokens, and every rank
// of a run names the same few hundred kernels, so thousands of ranks asked them millions of
// times (about a tenth of reading a real rank). Thread-safe; past kMaxNames names it forgets
// them all and starts again, so a stream of distinct names costs memory once.
//
//   static base::NameMemo<bool> memo;
//   return memo.Get(name, [&] { return ScanForTokens(name); });
#pragma once

#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace trainprof::base {

template <class V>
class NameMemo {
 public:
  static constexpr size_t kMaxNames = size_t{1} << 16;

  // compute() when `name` was not asked before (or was forgotten); the kept answer otherwise.
  template <class F>
  V Get(std::string_view name, F&& compute) {
    {
      std::shared_lock<std::shared_mutex> read(mu_);
      if (auto it = answers_.find(name); it != answers_.end()) return it->second;
    }
    V answer = compute();
    std::unique_lock<std::shared_mutex> write(mu_);
    if (answers_.size() >= kMaxNames) answers_.clear();
    answers_.emplace(std::string(name), answer);
    return answer;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::shared_mutex mu_;
  std::unordered_map<std::string, V, Hash, std::equal_to<>> answers_;
};

}  // namespace trainprof::base
