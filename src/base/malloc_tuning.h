// How a command's malloc gets and keeps memory. By default glibc gives a block of 128 KiB or more
// back to the kernel when it is freed, and grows its heap a few 4 KiB pages at a time; each
// first touch of a page then faults, about 10 µs on a VM, and analyze of a 58 MB trace took
// some 4,000 faults (a third of its time) for 20 MB of peak memory. Tuned, 420-830
// (docs/perf-log/reader-and-analyze.md).
//
//   base::TuneMallocForCommand();  // analyze, before it reads (cli/analyze_command.cc)
#pragma once

namespace trainprof::base {

// Makes malloc (glibc's; elsewhere these do nothing) keep what is freed for the next
// allocation, serve blocks up to 32 MiB from its heaps, and reserve the main heap's first
// 64 MiB at once with transparent huge pages asked for over it (madvise; where the kernel's
// THP setting is "never" the pages stay small). A page touched anywhere is then resident
// whole: peak memory rises (analyze of a 58 MB trace: 20 -> 31 MB), and a larger reserve
// would raise it further for big traces (a 1 GB trace at 256 MiB: 136 -> 179 MB, for 3.5 ->
// 1.7 s). Memory is not returned before exit.
// Call it in a command that analyses, before it reads; never in a library user's process
// (import trainprof, a training loop, the job `trainprof profile` measures).
void TuneMallocForCommand();

// Serves every thread from the main heap, for threads that hand their work along one pipeline
// (one trace: an inflating thread, parsing threads, the caller): what one frees the next
// reuses, in huge pages. Threads working apart (many rank files) would wait on its lock instead
// (1,000 ranks: 1.38 -> 1.65 s). Takes effect only before a second thread first allocates.
void ShareOneHeapAcrossThreads();

}  // namespace trainprof::base
