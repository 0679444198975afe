// A value kept on the heap: where it is held it takes a pointer's room, and it can be let go
// (reset) while its holder stays. A copy copies the value. Made for the part of a large
// record that is read rarely and kept out of memory between reads (analysis/rank_analysis.h's
// RankTables and RankLists, memory_view.h's DeviceSeries and MemoryLists, which a rank of many
// waits for in a scratch file). A box let go reads, through a const path, as a value made with the
// default constructor (lists let go read as empty, as they did before they moved into boxes);
// through a mutable one it is a bug, and aborts.
//
//   base::Box<Tables> t;        // holds a Tables made with its default constructor
//   t->rows.push_back(...);     // as a pointer
//   t.reset();                  // let go: empty (bool false) until emplace()
//   std::as_const(t)->rows      // empty rows while let go
#pragma once

#include <cstddef>
#include <cstdlib>
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
  T* operator->() { return &**this; }
  const T* operator->() const { return &**this; }
  T& operator*() {
    if (p_ == nullptr) std::abort();  // a value let go is written to: emplace() it first
    return *p_;
  }
  const T& operator*() const { return p_ != nullptr ? *p_ : Default(); }
  T& emplace() {
    p_ = std::make_unique<T>();
    return *p_;
  }
  void reset() { p_.reset(); }

 private:
  static const T& Default() {
    static const T value;
    return value;
  }
  std::unique_ptr<T> p_;
};

}  // namespace trainprof::base
