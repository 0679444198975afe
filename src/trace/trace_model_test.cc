// The model's compact columns: what goes in comes out, whatever the values.
#include "trace/trace_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace trainprof::trace {
namespace {

constexpr int64_t kEpochNs = 1'700'000'000'000'000'000;  // 2023, in ns since the epoch

std::vector<int64_t> Values(const TimeColumn& c) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < c.size(); ++i) out.push_back(c[i]);
  return out;
}

TimeColumn Of(const std::vector<int64_t>& v) {
  TimeColumn c;
  for (int64_t t : v) c.push_back(t);
  return c;
}

// Times in order, times that go back, a seam of 10 s between two threads' events inside one
// block, and times in no order at all (every block kept whole): all read back exactly.
TEST(TimeColumn, ReadsBackEveryTime) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> v;
  for (int k = 0; k < 5000; ++k) v.push_back(kEpochNs + k * 1000);          // in order
  for (int k = 0; k < 500; ++k) v.push_back(kEpochNs - 2'000'000'000 + k);  // 2 s back
  v.push_back(kEpochNs + 10'000'000'000);  // a seam in the middle of a block
  for (int k = 0; k < 3000; ++k) v.push_back(kEpochNs + 10'000'000'000 + k);
  for (int k = 0; k < 3000; ++k) v.push_back(static_cast<int64_t>(rng() >> 1));  // no order
  v.push_back(INT64_MAX);
  v.push_back(INT64_MIN + 1);
  v.push_back(-5);
  EXPECT_EQ(Values(Of(v)), v);
}

TEST(TimeColumn, ShiftAddsToEveryTime) {
  std::vector<int64_t> v;
  for (int k = 0; k < 3000; ++k) v.push_back(k % 700 == 0 ? int64_t{1} << 40 : k);  // some whole
  TimeColumn c = Of(v);
  c.Shift(kEpochNs);
  for (int64_t& t : v) t += kEpochNs;
  EXPECT_EQ(Values(c), v);
}

// A column read in two parts and joined is the column read in one: blocks start anew at the
// join, so the storage (and ==) cannot tell them apart.
TEST(TimeColumn, AbsorbedPartsEqualOneColumn) {
  std::vector<int64_t> v;
  for (int k = 0; k < 4000; ++k) v.push_back(kEpochNs + (k % 1500 == 0 ? 9'000'000'000 : k * 37));
  for (size_t cut : {size_t{0}, size_t{1}, size_t{1024}, size_t{1500}, size_t{3999}}) {
    TimeColumn head = Of({v.begin(), v.begin() + static_cast<std::ptrdiff_t>(cut)});
    TimeColumn tail = Of({v.begin() + static_cast<std::ptrdiff_t>(cut), v.end()});
    head.Absorb(std::move(tail));
    EXPECT_TRUE(tail.empty());
    EXPECT_EQ(Values(head), v) << "cut at " << cut;
    EXPECT_TRUE(head == Of(v)) << "cut at " << cut;
  }
}

// Input sets are kept once each: the same texts give one id, any field that differs another,
// and 200 interned sets (past several growths of the index) all read back.
TEST(InputSets, KeepsEachDistinctSetOnce) {
  InputSets sets;
  std::vector<uint32_t> ids;
  for (uint32_t k = 0; k < 200; ++k) ids.push_back(sets.Intern({.dims = k / 4, .types = k % 4}));
  for (uint32_t k = 0; k < 200; ++k) {
    EXPECT_EQ(sets.Intern({.dims = k / 4, .types = k % 4}), ids[k]);
    EXPECT_EQ(sets[ids[k]], (OpInputs{.dims = k / 4, .types = k % 4}));
  }
  EXPECT_EQ(sets.size(), 200u);
  EXPECT_NE(sets.Intern({.dims = 1, .stack = 2}), sets.Intern({.dims = 1, .concrete = 2}));
  EXPECT_EQ(sets.size(), 202u);
}

// A part's inputs keep their texts when the part is absorbed: its name ids and set ids are
// another model's, and two of its three sets are already the head's.
TEST(TraceModel, AbsorbedInputsKeepTheirTexts) {
  auto model = [](const std::vector<std::string>& dims) {
    TraceModel m;
    m.names.Intern("padding " + std::to_string(dims.size()));  // the parts' ids differ
    for (const std::string& d : dims) {
      const size_t i = m.Add(EventKind::kCpuOp, "aten::mm", 0, 1, 0);
      m.AddInputs(static_cast<uint32_t>(i), {.dims = m.names.Intern(d)});
    }
    return m;
  };
  TraceModel head = model({"[[1]]", "[[2]]"});
  TraceModel tail = model({"[[2]]", "[[3]]", "[[1]]"});
  std::vector<uint32_t> names(tail.names.size());
  for (uint32_t id = 0; id < names.size(); ++id) names[id] = head.names.Intern(tail.names[id]);
  head.Absorb(std::move(tail), names, {0});
  std::vector<std::string> dims;
  for (size_t i = 0; i < head.size(); ++i) dims.push_back(head.names[head.InputsOf(i)->dims]);
  EXPECT_EQ(dims, (std::vector<std::string>{"[[1]]", "[[2]]", "[[2]]", "[[3]]", "[[1]]"}));
  EXPECT_EQ(head.input_sets.size(), 3u);
}

}  // namespace
}  // namespace trainprof::trace
