#include "base/malloc_tuning.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace trainprof::base {
namespace {

extern "C" char end;  // the linker's: the first byte past the program's data, where brk starts

// Whether malloc serves small blocks from the brk heap, as glibc's does (not a sanitizer's own
// allocator, whose blocks lie far from it, nor musl's).
bool MallocUsesTheBrkHeap() {
#if defined(__GLIBC__)
  void* volatile p = malloc(64);
  const bool in_heap = static_cast<char*>(p) > &end && static_cast<char*>(p) < sbrk(0);
  free(p);
  return in_heap;
#else
  return false;
#endif
}

// The THPeligible line of /proc/self/smaps for the mapping that holds `p`; -1 if none.
int ThpEligible(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> from >> dash >> to && dash == '-') inside = from <= at && at < to;
    if (inside && line.starts_with("THPeligible:")) return std::stoi(line.substr(12));
  }
  return -1;
}

std::string ThpSetting() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s;
}

TEST(MallocTuning, FreedBlocksStayForTheNextAllocation) {
  if (!MallocUsesTheBrkHeap())
    GTEST_SKIP() << "malloc is not glibc's brk heap here (a sanitizer's allocator, or musl)";
  TuneMallocForCommand(2);
  void* volatile block = malloc(size_t{8} << 20);  // under the 32 MiB threshold: from the heap
  const void* end = sbrk(0);
  free(block);
  EXPECT_EQ(sbrk(0), end) << "the heap was trimmed when the block was freed";
  void* volatile again = malloc(size_t{8} << 20);
  EXPECT_EQ(again, block) << "the next block as large did not reuse the freed one";
  free(again);
}

TEST(MallocTuning, HeapAsksForHugePages) {
  if (!MallocUsesTheBrkHeap())
    GTEST_SKIP() << "malloc is not glibc's brk heap here (a sanitizer's allocator, or musl)";
  const std::string setting = ThpSetting();
  if (setting.empty() || setting.find("[never]") != std::string::npos)
    GTEST_SKIP() << "the kernel has transparent huge pages off (" << setting << ")";
  TuneMallocForCommand(2);
  void* volatile block = malloc(size_t{8} << 20);
  // Its first bytes may lie below the reserve, in the heap's small pages; its last do not.
  EXPECT_EQ(ThpEligible(static_cast<char*>(block) + (size_t{8} << 20) - 1), 1)
      << "THP setting: " << setting;
  free(block);
}

}  // namespace
}  // namespace trainprof::base
