#include "torch/cuda_allocator.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <optional>

#if TRAINPROF_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/cuda/memory_snapshot.h>
#endif

namespace trainprof::torchlib {

#if TRAINPROF_TORCH_CUDA

bool CudaAllocatorInUse() { return torch::cuda::is_available(); }

Status UseCudaDevice(int device) {
  try {
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(device));
  } catch (const std::exception& e) {
    return InternalError(fmt::format("selecting CUDA device {}: {}", device, e.what()));
  }
  return Status::Ok();
}

StatusOr<CudaMemoryStep> TakeCudaMemoryStep(int64_t step) {
  namespace alloc = c10::cuda::CUDACachingAllocator;
  try {
    const c10::DeviceIndex dev = c10::cuda::current_device();
    const auto s = alloc::getDeviceStats(dev);
    constexpr size_t kAll = 0;  // StatType::AGGREGATE: every pool
    CudaMemoryStep m;
    m.step = step;
    m.allocated = s.allocated_bytes[kAll].current, m.allocated_peak = s.allocated_bytes[kAll].peak;
    m.reserved = s.reserved_bytes[kAll].current, m.reserved_peak = s.reserved_bytes[kAll].peak;
    m.active = s.active_bytes[kAll].current, m.active_peak = s.active_bytes[kAll].peak;
    m.alloc_retries = s.num_alloc_retries;
    m.ooms = s.num_ooms;
    alloc::resetPeakStats(dev);
    return m;
  } catch (const std::exception& e) {
    return InternalError(std::string("reading the CUDA allocator's statistics: ") + e.what());
  }
}

StatusOr<int64_t> CudaAllocatedBytes(int device) {
  namespace alloc = c10::cuda::CUDACachingAllocator;
  try {
    return static_cast<int64_t>(
        alloc::getDeviceStats(static_cast<c10::DeviceIndex>(device)).allocated_bytes[0].current);
  } catch (const std::exception& e) {
    return InternalError(std::string("reading the CUDA allocator's statistics: ") + e.what());
  }
}

Status StartCudaMemoryHistory(const std::string& stacks, int64_t max_entries) {
  try {
    const size_t n = max_entries > 0 ? static_cast<size_t>(max_entries) : SIZE_MAX;
    torch::cuda::_record_memory_history(std::optional<std::string>("all"),
                                        std::optional<std::string>("all"), stacks, n);
  } catch (const std::exception& e) {
    return InternalError(std::string("starting the CUDA memory history: ") + e.what());
  }
  return Status::Ok();
}

StatusOr<std::string> DumpCudaMemoryHistory() {
  try {
    std::string pickle = torch::cuda::_memory_snapshot_pickled();
    torch::cuda::_record_memory_history(std::optional<std::string>(), std::nullopt, "all", 0);
    return pickle;
  } catch (const std::exception& e) {
    return InternalError(std::string("dumping the CUDA memory history: ") + e.what());
  }
}

#else  // a CPU LibTorch

namespace {
Status NoCuda() {
  return UnimplementedError(
      "this trainprof is built against a CPU-only LibTorch, which has no CUDA allocator (build "
      "it against a CUDA LibTorch: docs/gpu.md)");
}
}  // namespace

bool CudaAllocatorInUse() { return false; }
Status UseCudaDevice(int) { return NoCuda(); }
StatusOr<CudaMemoryStep> TakeCudaMemoryStep(int64_t) { return NoCuda(); }
StatusOr<int64_t> CudaAllocatedBytes(int) { return NoCuda(); }
Status StartCudaMemoryHistory(const std::string&, int64_t) { return NoCuda(); }
StatusOr<std::string> DumpCudaMemoryHistory() { return NoCuda(); }

#endif

}  // namespace trainprof::torchlib
