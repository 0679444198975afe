/* What a fresh page costs this machine: 24 MiB of anonymous memory touched a page at a time,
 * populated first with MADV_POPULATE_WRITE, and touched under transparent huge pages. On a VM
 * whose page tables the hypervisor tracks, first touches dominate a short process's system time
 * (docs/perf-log/reader-and-analyze.md, 2026-12-06).
 *   cc -O2 -o /tmp/page_touch_cost bench/page_touch_cost.c && /tmp/page_touch_cost */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Milliseconds to touch n bytes of a fresh mapping: plain, populated first, or huge pages. */
static double Touch(size_t n, int how) {
  const size_t huge = (size_t)2 << 20;
  char* base = mmap(0, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return -1;
  char* p = (char*)(((uintptr_t)base + huge - 1) & ~(uintptr_t)(huge - 1));
  if (how == 2) madvise(p, n, MADV_HUGEPAGE);
  const double t0 = Now();
  if (how == 1 && madvise(p, n, MADV_POPULATE_WRITE) != 0) return -1;
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  const double ms = (Now() - t0) * 1e3;
  munmap(base, n + huge);
  return ms;
}

int main(void) {
  const size_t n = (size_t)24 << 20;
  for (int rep = 0; rep < 3; ++rep)
    printf("24 MiB: touched %.1f ms, populated %.1f ms, huge pages %.1f ms (%zu pages)\n",
           Touch(n, 0), Touch(n, 1), Touch(n, 2), n / 4096);
  return 0;
}
