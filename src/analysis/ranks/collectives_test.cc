#include "analysis/ranks/collectives.h"

#include <gtest/gtest.h>

namespace trainprof::analysis {
namespace {

TEST(Collectives, TypeFromArgOrKernelName) {
  EXPECT_EQ(CollectiveType("allreduce", ""), "allreduce");
  EXPECT_EQ(CollectiveType("_allgather_base", ""), "allgather");
  EXPECT_EQ(CollectiveType("reduce_scatter_tensor_coalesced", ""), "reducescatter");
  EXPECT_EQ(CollectiveType("all_to_allv", ""), "alltoall");
  EXPECT_EQ(CollectiveType("", "ncclKernel_AllReduce_RING_LL_Sum_float"), "allreduce");
  EXPECT_EQ(CollectiveType("", "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*)"),
            "reducescatter");
  EXPECT_EQ(CollectiveType("", "void ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)"),
            "sendrecv");
  EXPECT_EQ(CollectiveType("", "mscclKernel_Sum_float_LL(...)"), "");
  EXPECT_EQ(CollectiveType("", "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"), "");
  // The arg wins over the name: a generic kernel names nothing.
  EXPECT_EQ(CollectiveType("broadcast", "ncclDevKernel_Generic_4"), "broadcast");
}

TEST(Collectives, DtypeBytes) {
  EXPECT_EQ(DtypeBytes("Float"), 4);
  EXPECT_EQ(DtypeBytes("BFloat16"), 2);
  EXPECT_EQ(DtypeBytes("c10::Half"), 2);
  EXPECT_EQ(DtypeBytes("Long"), 8);
  // A cpu_op's "Input type" spelling (the FLOPs' bytes use the same table).
  EXPECT_EQ(DtypeBytes("long int"), 8);
  EXPECT_EQ(DtypeBytes("float"), 4);
  EXPECT_EQ(DtypeBytes("unsigned char"), 1);
  EXPECT_EQ(DtypeBytes("Float8_e4m3fn"), 1);
  EXPECT_EQ(DtypeBytes("Quaternion"), 0);
}

// nccl-tests' PERFORMANCE.md: allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n.
TEST(Collectives, BusFactorPerType) {
  Collective c;
  c.group_size = 8;
  c.type = "allreduce";
  EXPECT_DOUBLE_EQ(c.BusFactor(), 14.0 / 8);
  c.type = "allgather";
  EXPECT_DOUBLE_EQ(c.BusFactor(), 7.0 / 8);
  c.type = "reducescatter";
  EXPECT_DOUBLE_EQ(c.BusFactor(), 7.0 / 8);
  c.type = "broadcast";
  EXPECT_DOUBLE_EQ(c.BusFactor(), 1.0);
  c.bytes = 1'000'000;
  c.transfer_ns = 1'000'000;  // 1 MB in 1 ms
  EXPECT_DOUBLE_EQ(c.algbw(), 1e9);
  c.bytes = -1;
  EXPECT_DOUBLE_EQ(c.algbw(), 0);
}

}  // namespace
}  // namespace trainprof::analysis
