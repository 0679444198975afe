// The job's process group in a world of one rank: gradients averaged over the ranks come back as
// they went in, the stop wish travels with them, and on a GPU the same holds for CUDA tensors
// over Gloo and over NCCL. Without NCCL in the build, the backend is refused saying why.
#include "jobs/distributed.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace trainprof::jobs {
namespace {

// A port nothing listens on now: the kernel's pick for a socket bound to port 0.
int64_t FreeTcpPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

StatusOr<std::unique_ptr<Distributed>> OneRank(const std::string& backend) {
  LaunchEnv env;
  env.launcher = "torchrun";
  env.master_port = FreeTcpPort();
  DistributedConfig cfg;
  cfg.backend = backend;
  cfg.timeout_s = 30;
  return Distributed::Init(env, cfg);
}

// The mean over one rank is the rank's own gradients; the stop wish comes back as it went.
void ExpectMeanOfOne(Distributed& d, const torch::Device& device) {
  const auto opts = torch::TensorOptions().device(device);
  std::vector<torch::Tensor> grads = {torch::arange(6, opts).reshape({2, 3}).to(torch::kFloat32),
                                      torch::full({4}, 2.5f, opts)};
  const std::vector<torch::Tensor> before = {grads[0].clone(), grads[1].clone()};
  for (bool wish : {false, true}) {
    bool stop = wish;
    ASSERT_TRUE(d.AllReduceMean(grads, &stop).ok());
    EXPECT_EQ(stop, wish);
    EXPECT_TRUE(torch::equal(grads[0], before[0]));
    EXPECT_TRUE(torch::equal(grads[1], before[1]));
  }
  auto sums = torch::tensor({1.0, 2.0, 3.0}, torch::kFloat64);  // validation sums, on the CPU
  ASSERT_TRUE(d.AllReduceSum(sums).ok());
  EXPECT_DOUBLE_EQ(sums[2].item<double>(), 3.0);
  ASSERT_TRUE(d.Broadcast(grads).ok());
  EXPECT_TRUE(torch::equal(grads[1], before[1]));
}

TEST(Distributed, OneGlooRankAveragesToItsOwnGradients) {
  auto d = OneRank("gloo");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ExpectMeanOfOne(**d, torch::Device(torch::kCPU));
  auto offset = (*d)->MeasureClockOffset(2);
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset->offset_ns, 0) << "rank 0 is its own reference";
}

// scripts/gpu/check.sh sets TRAINPROF_REQUIRE_GPU, so that a GPU LibTorch cannot use is a
// failure there rather than a skip.
TEST(Distributed, OnAGpuGlooAndNcclCarryCudaTensors) {
  if (!torch::cuda::is_available()) {
    if (std::getenv("TRAINPROF_REQUIRE_GPU") != nullptr) FAIL() << "LibTorch sees no GPU";
    GTEST_SKIP() << "needs a GPU and a CUDA LibTorch build";
  }
  auto gloo = OneRank("gloo");
  ASSERT_TRUE(gloo.ok()) << gloo.status().ToString();
  ExpectMeanOfOne(**gloo, torch::Device(torch::kCUDA, 0));
  gloo->reset();
#if TRAINPROF_HAVE_NCCL
  auto nccl = OneRank("nccl");
  ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
  ExpectMeanOfOne(**nccl, torch::Device(torch::kCUDA, 0));
#endif
}

#if !TRAINPROF_HAVE_NCCL  // a build with NCCL runs it in OnAGpuGlooAndNcclCarryCudaTensors
TEST(Distributed, NcclWithoutItInTheBuildSaysWhy) {
  auto d = OneRank("nccl");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(d.status().message().find("use distributed.backend gloo"), std::string::npos);
}
#endif

}  // namespace
}  // namespace trainprof::jobs
