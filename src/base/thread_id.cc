#include "base/thread_id.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

namespace trainprof::base {
namespace {

thread_local int64_t t_id = 0;

// In a forked child only the forking thread runs on, under an id of its own.
void ForgetInChild() { t_id = 0; }

}  // namespace

int64_t ThisThreadId() {
  if (t_id != 0) return t_id;
  static std::once_flag registered;
  std::call_once(registered, [] { pthread_atfork(nullptr, nullptr, ForgetInChild); });
  t_id = static_cast<int64_t>(syscall(SYS_gettid));
  return t_id;
}

}  // namespace trainprof::base
