#include "base/name_memo.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace trainprof::base {
namespace {

TEST(NameMemo, ComputesEachNameOnceAndKeepsItsAnswer) {
  NameMemo<size_t> memo;
  int computed = 0;
  auto length = [&](std::string_view name) {
    return memo.Get(name, [&] { return ++computed, name.size(); });
  };
  EXPECT_EQ(length("sm90_xmma_gemm"), 14u);
  EXPECT_EQ(length(std::string("sm90_xmma_gemm")), 14u);  // the same name from another string
  EXPECT_EQ(length("nccl"), 4u);
  EXPECT_EQ(computed, 2);
}

TEST(NameMemo, ForgetsEverythingPastItsLimitAndComputesAgain) {
  NameMemo<int> memo;
  int computed = 0;
  auto ask = [&](size_t i) { return memo.Get(std::to_string(i), [&] { return ++computed; }); };
  for (size_t i = 0; i < NameMemo<int>::kMaxNames; ++i) ask(i);
  EXPECT_EQ(computed, static_cast<int>(NameMemo<int>::kMaxNames));
  EXPECT_EQ(ask(0), 1);           // still kept
  ask(NameMemo<int>::kMaxNames);  // one more: the memo starts again
  EXPECT_EQ(ask(0), static_cast<int>(NameMemo<int>::kMaxNames) + 2);
}

TEST(NameMemo, ThreadsAskingTheSameNamesGetTheSameAnswers) {
  NameMemo<size_t> memo;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        const std::string name = "kernel_" + std::to_string(i % 100);
        if (memo.Get(name, [&] { return name.size(); }) != name.size()) ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace trainprof::base
