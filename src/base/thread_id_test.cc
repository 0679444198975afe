#include "base/thread_id.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <thread>

namespace trainprof::base {
namespace {

int64_t KernelTid() { return static_cast<int64_t>(syscall(SYS_gettid)); }

// Each thread its own id, the kernel's, however often it is asked.
TEST(ThisThreadId, IsTheKernelsIdOfEachThread) {
  EXPECT_EQ(ThisThreadId(), KernelTid());
  EXPECT_EQ(ThisThreadId(), KernelTid());
  int64_t other = 0, other_kernel = 0;
  std::thread t([&] {
    other = ThisThreadId();
    other_kernel = KernelTid();
  });
  t.join();
  EXPECT_EQ(other, other_kernel);
  EXPECT_NE(other, ThisThreadId());
}

// A forked child's thread has the child's id, not the one its parent's thread kept.
TEST(ThisThreadId, AForkedChildAsksAgain) {
  const int64_t parent = ThisThreadId();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int64_t id = ThisThreadId();
    _exit(id == KernelTid() && id != parent ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ThisThreadId(), parent);
}

}  // namespace
}  // namespace trainprof::base
