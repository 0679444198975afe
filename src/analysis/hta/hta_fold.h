// HTA 0.6.1's fold of the smaller names into "others" (its _aggr_gpu_kernel_time), one function
// for the kernel breakdown (--hta-compat's top kernels per type) and the drop-in's
// get_gpu_user_annotation_breakdown, so Python no longer computes it a second time.
//
//   HtaFoldRule rule{.top = 1000, .duration_ratio = 0.8, .allowlist = {"backward"}};
//   std::vector<KernelStats> rows = HtaFold(std::move(per_name), rule);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/hta/hta.h"

namespace trainprof::analysis {

struct HtaFoldRule {
  size_t top = 10;              // names kept at most (HTA's num_kernels)
  double duration_ratio = 0.8;  // the quantile of the running sums past which names fold
  // A name containing one of these is never folded (HTA's allowlist_patterns).
  std::vector<std::string> allowlist;
};

// `rows`: one per name, with its instances' count, sum, min, max and sample std (NaN for one
// instance). Sorted by sum, largest first (ties by name), each name past `top`, or whose running
// sum is past the duration_ratio quantile of the running sums (pandas' linear quantile), is
// "others" unless allowed. With at most `top` rows nothing folds: the rows come back sorted, each
// with its mean and with std 0 for a NaN. Otherwise the rows come back by name, and each row's
// max, min, mean and std are over the per-name sums it holds, as HTA's second groupby gives them
// (a kept name's max is its sum, its std 0). The type of a row is that of its first member.
std::vector<KernelStats> HtaFold(std::vector<KernelStats> rows, const HtaFoldRule& rule);

}  // namespace trainprof::analysis
