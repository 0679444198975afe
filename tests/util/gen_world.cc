#include "util/gen_world.h"

#include <algorithm>
#include <map>
#include <string>

namespace trainprof::testutil {
namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kHalfNs = 1000 * kUs, kStartNs = 100 * kUs;
constexpr int64_t kTpTransferNs = 100 * kUs, kDpTransferNs = 400 * kUs;
const char* kGemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
const char* kAllReduce =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

// Half a step's compute of rank r in step s.
int64_t Compute(const WorldSpec& w, int64_t r, int64_t s) {
  int64_t ns = kHalfNs * (400 + ((r * 7 + s * 3) % 5 - 2)) / 400;
  return r == w.culprit ? ns * (100 + w.slow_pct) / 100 : ns;
}

int64_t Group(const WorldSpec& w, int64_t r) { return w.tp > 0 ? r / w.tp : 0; }

// When each group's collectives end in step s, from the step's start.
struct Ends {
  std::map<int64_t, int64_t> tp;
  int64_t dp = 0;
};

Ends EndsOf(const WorldSpec& w, int64_t s) {
  Ends e;
  for (int64_t r = 0; r < w.ranks; ++r)
    if (w.tp > 0) e.tp[Group(w, r)] = std::max(e.tp[Group(w, r)], kStartNs + Compute(w, r, s));
  for (auto& [g, t] : e.tp) t += kTpTransferNs;
  for (int64_t r = 0; r < w.ranks; ++r) {
    int64_t second = w.tp > 0 ? e.tp[Group(w, r)] : kStartNs + Compute(w, r, s);
    e.dp = std::max(e.dp, second + Compute(w, r, s));
  }
  e.dp += kDpTransferNs;
  return e;
}

GenGpuOp AllReduce(const WorldSpec& w, std::string group, int64_t size, int64_t seq, int64_t start,
                   int64_t end) {
  GenGpuOp op{.name = kAllReduce,
              .stream = 9,
              .start_ns = start,
              .dur_ns = end - start,
              .launch_delay_ns = 30 * kUs};
  op.collective = GenCollective{.group = std::move(group),
                                .seq = w.seq ? seq : -1,
                                .nelems = 1 << 22,
                                .dtype = "BFloat16",
                                .group_size = size};
  return op;
}

GenTrace RankTrace(const WorldSpec& w, int64_t r, const std::vector<Ends>& ends, int64_t step_ns) {
  GenTrace t;
  t.world_size = w.ranks;
  t.device_name = "NVIDIA H100 80GB HBM3";
  for (int64_t s = 0; s < w.steps; ++s) {
    GenStep st{.host_dur_ns = step_ns};
    const int64_t c = Compute(w, r, s);
    st.gpu_ops.push_back(
        {.name = kGemm, .start_ns = kStartNs, .dur_ns = c, .launch_delay_ns = 50 * kUs});
    int64_t second = kStartNs + c;
    if (w.tp > 0) {
      const int64_t end = ends[s].tp.at(Group(w, r));
      st.gpu_ops.push_back(AllReduce(w, "tp" + std::to_string(Group(w, r)), w.tp, s, second, end));
      second = end;
    }
    st.gpu_ops.push_back(
        {.name = kGemm, .start_ns = second, .dur_ns = c, .launch_delay_ns = 50 * kUs});
    st.gpu_ops.push_back(AllReduce(w, "dp", w.ranks, s, second + c, ends[s].dp));
    t.steps.push_back(st);
  }
  return t;
}

}  // namespace

std::vector<std::pair<GenTrace, GenRank>> GenerateWorld(const WorldSpec& w) {
  std::vector<Ends> ends;
  for (int64_t s = 0; s < w.steps; ++s) ends.push_back(EndsOf(w, s));
  // Every step as long as the slowest: the step ranges are equal across ranks and steps.
  int64_t step_ns = 0;
  for (const Ends& e : ends) step_ns = std::max(step_ns, e.dp + 300 * kUs);
  std::vector<std::pair<GenTrace, GenRank>> out;
  for (int64_t r = 0; r < w.ranks; ++r) {
    const int64_t skew = w.clock_ns * (((r * 37) % 11) - 5) / 5;  // within +-clock_ns
    out.emplace_back(RankTrace(w, r, ends, step_ns), GenRank{.rank = r, .skew_ns = skew});
  }
  return out;
}

}  // namespace trainprof::testutil
