// The calling thread's kernel id (what gettid() returns), asked of the kernel once per thread.
// A system call is dear on a VM (here each one made the torch and Python code after it about
// 18 µs slower a call: `os.getpid()` once per batch of a small training loop took 4,000 batches
// from 185 to 259 ms), and the session reads the id at every step.
//
//   const int64_t tid = base::ThisThreadId();
#pragma once

#include <cstdint>

namespace trainprof::base {

// The id, kept per thread; a process forked since reads its own again.
int64_t ThisThreadId();

}  // namespace trainprof::base
