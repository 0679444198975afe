#include "jobs/distributed.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if TRAINPROF_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace trainprof::jobs {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// c10::Error appends a C++ backtrace after the first line; the first line is the message.
std::string FirstLine(const std::exception& e) {
  std::string msg = e.what();
  if (size_t nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
  return msg;
}

}  // namespace

// Gloo always: the clock-offset exchange sends CPU tensors. With distributed.backend nccl, the
// training's collectives go through NCCL on the rank's GPU, as torch.distributed keeps a Gloo
// group beside NCCL for CPU work.
struct Distributed::State {
  c10::intrusive_ptr<c10d::Store> store;  // prefixed "trainprof/"
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
#if TRAINPROF_HAVE_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
  std::chrono::milliseconds timeout{0};
  std::optional<torch::Device> gpu;  // the rank's GPU, under NCCL

  // Runs `op` (allreduce or broadcast of a tensor list) on the group that carries the
  // training's tensors, and waits for it.
  template <typename Op>
  void Collective(std::vector<torch::Tensor>& tensors, Op op) {
#if TRAINPROF_HAVE_NCCL
    if (nccl) return (void)op(*nccl, tensors)->wait();
#endif
    op(*pg, tensors)->wait();
  }
  // The device a collective's tensors must be on: the rank's GPU under NCCL.
  torch::Device device(const torch::Tensor& like) const { return gpu ? *gpu : like.device(); }
};

namespace {

auto AllReduceOp = [](auto& group, std::vector<torch::Tensor>& t) { return group.allreduce(t); };
auto BroadcastOp = [](auto& group, std::vector<torch::Tensor>& t) { return group.broadcast(t); };

}  // namespace

Distributed::Distributed(LaunchEnv env, DistributedConfig cfg, std::unique_ptr<State> s)
    : env_(std::move(env)), cfg_(std::move(cfg)), s_(std::move(s)) {}

Distributed::~Distributed() = default;

std::chrono::milliseconds Distributed::timeout() const { return s_->timeout; }

Status Distributed::Failed(const std::string& what, const std::exception& e) const {
  return UnavailableError(fmt::format(
      "{} failed: {} (another rank died, hung for more than distributed.timeout_s = {:g} s, or "
      "cannot be reached)",
      what, FirstLine(e), cfg_.timeout_s));
}

StatusOr<std::unique_ptr<Distributed>> Distributed::Init(const LaunchEnv& env,
                                                         const DistributedConfig& cfg) {
#if !TRAINPROF_HAVE_NCCL
  if (cfg.backend == "nccl") {
    return UnimplementedError(
        TRAINPROF_TORCH_CUDA
            ? "distributed.backend nccl: this trainprof was built without NCCL's header "
              "(configure with -DNCCL_INCLUDE_DIR=<folder of nccl.h>): use distributed.backend "
              "gloo"
            : "distributed.backend nccl needs trainprof built against a CUDA LibTorch with NCCL; "
              "this build uses a CPU LibTorch: use distributed.backend gloo");
  }
#endif
  auto s = std::make_unique<State>();
  s->timeout = std::chrono::milliseconds(static_cast<int64_t>(cfg.timeout_s * 1000));
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(env.master_port);
    o.isServer = env.rank == 0 && !env.agent_store;
    o.numWorkers = static_cast<size_t>(env.world_size);
    o.waitWorkers = false;
    o.timeout = s->timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
    s->store = c10::make_intrusive<c10d::PrefixStore>("trainprof", tcp);
  } catch (const std::exception& e) {
    return UnavailableError(fmt::format("cannot {} the store at {}:{}: {}",
                                        env.rank == 0 && !env.agent_store ? "serve" : "reach",
                                        env.master_addr, env.master_port, FirstLine(e)));
  }
  try {
    auto opts = c10d::ProcessGroupGloo::Options::create(s->timeout);
    const bool loopback = env.master_addr == "127.0.0.1" || env.master_addr == "localhost";
    opts->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                     : c10d::ProcessGroupGloo::createDefaultDevice());
    opts->threads = 1;
    s->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("gloo", s->store), static_cast<int>(env.rank),
        static_cast<int>(env.world_size), opts);
#if TRAINPROF_HAVE_NCCL
    if (cfg.backend == "nccl") {
      auto nccl_opts = c10d::ProcessGroupNCCL::Options::create();
      nccl_opts->timeout = s->timeout;
      s->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          c10::make_intrusive<c10d::PrefixStore>("nccl", s->store), static_cast<int>(env.rank),
          static_cast<int>(env.world_size), nccl_opts);
      const auto gpus = static_cast<int64_t>(torch::cuda::device_count());
      if (gpus > 0) {
        s->gpu = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % gpus));
      }
    }
#endif
  } catch (const std::exception& e) {
    return UnavailableError(fmt::format(
        "the {} ranks did not all join within distributed.timeout_s = {:g} s (store {}:{}): {}",
        env.world_size, cfg.timeout_s, env.master_addr, env.master_port, FirstLine(e)));
  }
  return std::unique_ptr<Distributed>(new Distributed(env, cfg, std::move(s)));
}

Status Distributed::AllReduceMean(const std::vector<torch::Tensor>& tensors, bool* stop) {
  try {
    std::vector<torch::Tensor> parts;
    parts.reserve(tensors.size() + 1);
    for (const torch::Tensor& t : tensors) parts.push_back(t.reshape(-1));
    // The last element carries the stop wishes: positive after the sum when any rank has one.
    const auto like = tensors.empty() ? torch::TensorOptions() : tensors.front().options();
    parts.push_back(torch::full({1}, *stop ? 1.0f : 0.0f, like));
    std::vector<torch::Tensor> flat{torch::cat(parts)};
    s_->Collective(flat, AllReduceOp);
    *stop = flat[0][flat[0].numel() - 1].item<float>() > 0.5f;
    flat[0].div_(static_cast<double>(env_.world_size));
    int64_t pos = 0;
    for (const torch::Tensor& t : tensors) {
      const int64_t n = t.numel();
      t.copy_(flat[0].narrow(0, pos, n).view_as(t));
      pos += n;
    }
  } catch (const std::exception& e) {
    return Failed("all-reduce of the gradients", e);
  }
  return Status::Ok();
}

Status Distributed::AllReduceSum(torch::Tensor& t) {
  try {
    std::vector<torch::Tensor> v{t.to(s_->device(t))};
    s_->Collective(v, AllReduceOp);
    if (!v[0].is_same(t)) t.copy_(v[0]);
  } catch (const std::exception& e) {
    return Failed("all-reduce", e);
  }
  return Status::Ok();
}

Status Distributed::Broadcast(const std::vector<torch::Tensor>& tensors) {
  try {
    for (const torch::Tensor& t : tensors) {
      std::vector<torch::Tensor> v{t};
      s_->Collective(v, BroadcastOp);
    }
  } catch (const std::exception& e) {
    return Failed("broadcast of the initial weights", e);
  }
  return Status::Ok();
}

StatusOr<ClockOffset> Distributed::MeasureClockOffset(int rounds) {
  // Cristian's algorithm: rank r sends its clock t1, rank 0 answers with its clock t0, r reads
  // t2; rank 0's clock was t0 at about (t1 + t2) / 2 of r's, within half the round trip. The
  // round with the shortest trip is kept. Rank 0 serves the ranks one after the other.
  ClockOffset best;
  best.rounds = rounds;
  try {
    auto buf = torch::zeros({1}, torch::kInt64);
    std::vector<torch::Tensor> v{buf};
    if (env_.rank == 0) {
      for (int64_t r = 1; r < env_.world_size; ++r) {
        for (int k = 0; k < rounds; ++k) {
          s_->pg->recv(v, static_cast<int>(r), k)->wait(s_->timeout);
          buf.fill_(SteadyNs());
          s_->pg->send(v, static_cast<int>(r), k)->wait(s_->timeout);
        }
      }
      return best;
    }
    int64_t best_rtt = std::numeric_limits<int64_t>::max();
    for (int k = 0; k < rounds; ++k) {
      const int64_t t1 = SteadyNs();
      buf.fill_(t1);
      s_->pg->send(v, 0, k)->wait(s_->timeout);
      s_->pg->recv(v, 0, k)->wait(s_->timeout);
      const int64_t t2 = SteadyNs();
      const int64_t t0 = buf.item<int64_t>();
      if (t2 - t1 < best_rtt) {
        best_rtt = t2 - t1;
        best.offset_ns = t0 - (t1 + (t2 - t1) / 2);
        best.error_ns = (t2 - t1 + 1) / 2;
      }
    }
  } catch (const std::exception& e) {
    return Failed("clock-offset exchange with rank 0", e);
  }
  return best;
}

Status Distributed::Set(const std::string& key, const std::string& value) {
  try {
    s_->store->set(key, Bytes(value));
  } catch (const std::exception& e) {
    return Failed(fmt::format("publishing '{}' to the store at {}:{} (rank 0)", key,
                              env_.master_addr, env_.master_port),
                  e);
  }
  return Status::Ok();
}

StatusOr<std::string> Distributed::Get(const std::string& key, std::chrono::milliseconds timeout) {
  try {
    s_->store->wait({key}, timeout);
    std::vector<uint8_t> v = s_->store->get(key);
    return std::string(v.begin(), v.end());
  } catch (const std::exception& e) {
    return Failed(fmt::format("waiting for '{}' in the store", key), e);
  }
}

StatusOr<bool> Distributed::Check(const std::string& key) {
  try {
    return s_->store->check({key});
  } catch (const std::exception& e) {
    return Failed(fmt::format("reading '{}' from the store", key), e);
  }
}

}  // namespace trainprof::jobs
