// A value kept on the heap: where it is held it takes a pointer's room, and it can be let go
// (reset) while its holder stays. A copy copies the value. Made for the part of a large
// record that is read rarely and kept out of memory between reads (analysis/rank_analysis.h's
// RankTables and memory_view.h's DeviceSeries, which a rank of many waits for in a scratch
// file).
//
//   base::Box<Tables> t;        // holds a Tables made with its default constructor
//   t->rows.push_back(...);     // as a pointer
//   t.reset();                  // let go: empty (bool false) until emplace()
#pragma once

#include <cstddef>
#include <memory>

namespace trainprof::base {

template <class T>
class Box {
 public:
  Box() : p_(std::make_unique<T>()) {}
  explicit Box(std::nullptr_t) {}
  Box(const Box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Box& operator=(const Box& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Box(Box&&) noexcept = default;
  Box& operator=(Box&&) noexcept = default;

  explicit operator bool() const { return p_ != nullptr; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T& emplace() {
    p_ = std::make_unique<T>();
    return *p_;
  }
  void reset() { p_.reset(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace trainprof::base
