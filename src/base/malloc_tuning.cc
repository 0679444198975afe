#include "base/malloc_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#endif

namespace trainprof::base {
namespace {

#if defined(__GLIBC__)
constexpr int kReserveBytes = 64 << 20;
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// Grows the main heap by kReserveBytes now (address space only) and asks for huge pages over
// it. Later growth, past the reserve, comes in small pages as before.
void ReserveHugeHeap() {
  mallopt(M_TOP_PAD, kReserveBytes);
  const auto before = reinterpret_cast<uintptr_t>(sbrk(0));
  void* volatile grow = malloc(size_t{4} << 20);  // volatile: the pair must not be elided
  free(grow);
  const auto after = reinterpret_cast<uintptr_t>(sbrk(0));
  mallopt(M_TOP_PAD, 128 << 10);  // glibc's default again
  const uintptr_t begin = (before + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = after & ~(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}
#endif

}  // namespace

void TuneMallocForCommand(size_t input_files) {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // the reserve's block must come from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ReserveHugeHeap();
  if (input_files != 1) return;
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 1);
#else
  (void)input_files;
#endif
}

}  // namespace trainprof::base
