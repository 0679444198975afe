// How a command's malloc gets and keeps memory. By default glibc gives a block of 128 KiB or more
// back to the kernel when it is freed, and grows its heap a few 4 KiB pages at a time; each
// first touch of a page then faults, about 10 µs on a VM, and analyze of a 58 MB trace took
// some 4,000 faults (a third of its time) for 20 MB of peak memory. Tuned, 420-830
// (docs/perf-log/reader-and-analyze.md).
//
//   base::TuneMallocForCommand(files.size());  // analyze, before it reads
#pragma once

#include <cstddef>

namespace trainprof::base {

// Makes malloc (glibc's; elsewhere this does nothing) keep what is freed for the next
// allocation and reserve the main heap's first 64 MiB at once with transparent huge pages asked
// for over it (madvise; where the kernel's THP setting is "never" the pages stay small). A page
// touched anywhere is then resident whole: peak memory rises (analyze of a 58 MB trace: 20 ->
// 31 MB), and a larger reserve would raise it further for big traces (a 1 GB trace at 256 MiB:
// 136 -> 179 MB, for 3.5 -> 1.7 s). Memory is not returned before exit.
//
// How big blocks are served depends on `input_files`, the files the command is about to read:
// * one: every block over 1 MiB that the reserve cannot hold mapped on its own and returned when
//   freed (glibc asks its mmap threshold only when the heap's top is too small, so blocks are
//   served from the reserve while it lasts; a model's columns grow by doubling; peak RSS on a
//   1 GB trace 183 MB with, 217 MB without), and every thread
//   served from the main heap: the inflating thread, the parsers and the caller hand their
//   buffers along one pipeline, what one frees the next reuses, in huge pages (a thread's own
//   heap grows in steps that never cover a huge page);
// * several: blocks up to 32 MiB from the heaps (each model mapping, faulting in and unmapping
//   its columns afresh cost 1,000 rank files of 1 MB 223,000 faults and 1.1 s of system time,
//   against 11,000 and 0.46 s), and a heap per thread: threads reading files apart would wait
//   on one heap's lock (1,000 ranks: 1.38 -> 1.65 s).
//
// Call it in a command that analyses, before it reads and before a second thread allocates;
// never in a library user's process (import trainprof, a training loop, the job `trainprof
// profile` measures) nor in a long-lived command (mcp, watch), which should give memory back.
void TuneMallocForCommand(size_t input_files);

}  // namespace trainprof::base
