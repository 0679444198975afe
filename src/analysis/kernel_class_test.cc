#include "analysis/kernel_class.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "analysis/hta.h"
#include "analysis/intervals.h"

namespace trainprof::analysis {
namespace {

TEST(KernelClass, CommunicationInEveryNaming) {
  for (const char* n : {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
                        "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                        "void ncclDevKernel_Generic_4(ncclDevComm*, unsigned long, ncclWork*)",
                        "mscclKernel_Sum_float_LL", "rcclGenericKernel", "hcclAllReduce"})
    EXPECT_TRUE(IsCommunicationKernel(n)) << n;
  for (const char* n : {"void at::native::vectorized_elementwise_kernel<4>",
                        "ampere_sgemm_128x64_nn", "Memcpy DtoD (Device -> Device)"})
    EXPECT_FALSE(IsCommunicationKernel(n)) << n;
}

}  // namespace
}  // namespace trainprof::analysis

namespace trainprof::analysis {
namespace {

TEST(KernelClass, HtaRuleMissesDemangledNcclNamesWeCatch) {
  const char* demangled = "void ncclDevKernel_Generic_4(ncclDevComm*, unsigned long, ncclWork*)";
  EXPECT_EQ(HtaKernelType(demangled), static_cast<int>(KernelType::kComputation));
  EXPECT_EQ(ClassifyGpuEvent(trace::EventKind::kKernel, demangled), KernelType::kCommunication);
  EXPECT_EQ(HtaKernelType("ncclKernel_AllReduce_RING_LL_Sum_float"),
            static_cast<int>(KernelType::kCommunication));
  EXPECT_EQ(HtaKernelType("Memcpy HtoD (Pinned -> Device)"), static_cast<int>(KernelType::kMemory));
  EXPECT_EQ(HtaKernelType("Context Sync"), -1);  // HTA's OTHER
  EXPECT_EQ(ClassifyGpuEvent(trace::EventKind::kMemset, "Memset (Device)"), KernelType::kMemory);
}

TEST(KernelClass, TensorCoresAndOps) {
  EXPECT_TRUE(
      UsesTensorCores("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>"));
  EXPECT_TRUE(UsesTensorCores("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"));
  EXPECT_TRUE(UsesTensorCores("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64"));
  EXPECT_FALSE(UsesTensorCores("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(UsesTensorCores("void at::native::vectorized_elementwise_kernel<4>"));
  EXPECT_TRUE(IsDataLoaderOp("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"));
  EXPECT_TRUE(IsDataLoaderOp("[_TrainingEpochLoop].train_dataloader_next"));
  EXPECT_FALSE(IsDataLoaderOp("aten::mm"));
  EXPECT_TRUE(IsCommunicationOp("nccl:all_reduce"));
  EXPECT_TRUE(IsCommunicationOp("c10d::allreduce_"));
  EXPECT_FALSE(IsCommunicationOp("aten::add"));
}

TEST(Intervals, UnionIntersectSubtract) {
  Intervals u = Union({{30, 40}, {0, 10}, {5, 20}, {20, 25}, {50, 50}});
  EXPECT_EQ(u, (Intervals{{0, 25}, {30, 40}}));
  EXPECT_EQ(Length(u), 35);
  EXPECT_EQ(Intersect(u, {{8, 32}, {38, 60}}), (Intervals{{8, 25}, {30, 32}, {38, 40}}));
  EXPECT_EQ(Subtract({{0, 50}}, u), (Intervals{{25, 30}, {40, 50}}));
  EXPECT_EQ(Subtract(u, {{0, 100}}), Intervals{});
  EXPECT_EQ(LengthWithin(u, 20, 35), 10);
  EXPECT_EQ(LengthWithin(u, 100, 200), 0);
}

// Big inputs are sorted by radix: the union must be the one of a plain sort and sweep, also
// with equal begins, empty intervals, negative times and begins spanning all 64 bits.
TEST(Intervals, UnionOfManyIsTheSortedSweep) {
  std::mt19937_64 rng(7);
  for (int64_t spread :
       {int64_t{1000}, int64_t{1} << 40, std::numeric_limits<int64_t>::max() / 2}) {
    Intervals v;
    for (int k = 0; k < 5000; ++k) {
      const auto b = static_cast<int64_t>(rng() % static_cast<uint64_t>(spread)) - spread / 2;
      v.push_back({b, b + static_cast<int64_t>(rng() % 50) - 5});  // some empty or reversed
    }
    v.push_back(v[10]);  // an equal begin
    Intervals sorted = v;
    std::sort(sorted.begin(), sorted.end(), [](const Interval& a, const Interval& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    Intervals want;
    for (const Interval& i : sorted) {
      if (i.end <= i.begin) continue;
      if (!want.empty() && i.begin <= want.back().end)
        want.back().end = std::max(want.back().end, i.end);
      else
        want.push_back(i);
    }
    EXPECT_EQ(Union(v), want) << spread;
    Intervals appended;  // merged as they come, in file order and in sorted order
    for (const Interval& i : v) AppendForUnion(appended, i);
    EXPECT_EQ(Union(appended), want) << spread;
    appended.clear();
    for (const Interval& i : sorted) AppendForUnion(appended, i);
    EXPECT_EQ(Union(appended), want) << spread;
    if (spread == 1000) {  // dense: in sorted order the overlaps take one entry, not one each
      EXPECT_LT(appended.size(), sorted.size() / 10);
    }
  }
}

}  // namespace
}  // namespace trainprof::analysis
