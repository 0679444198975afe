// HTA's frequent CUDA kernel sequences, as fusion candidates: for every call of an outermost
// operator (a cpu_op with no cpu_op around it), the kernels it launched with its children, in
// GPU start order; identical sequences of one operator are counted together.
//
//   std::vector<KernelSequence> s = FrequentKernelSequences(model, BuildOpTree(model), {});
//   // s[0]: the operator and kernel sequence that took the most GPU time, over >= 2 calls
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/op_tree.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct KernelSequenceOptions {
  size_t min_length = 3;  // kernels in a sequence (HTA's min_pattern_len)
  int64_t min_calls = 2;  // a sequence seen once is not frequent
  size_t top = 10;        // sequences kept (HTA's top_k), by total GPU time
};

struct KernelSequence {
  std::string op;                    // the outermost operator
  std::vector<std::string> kernels;  // in GPU start order
  int64_t calls = 0;                 // calls of `op` that launched exactly this sequence
  int64_t total_ns = 0;              // the kernels' summed duration over those calls
};

// Never fails; no sequence when no operator launched min_length kernels twice the same way.
std::vector<KernelSequence> FrequentKernelSequences(const trace::TraceModel& m, const OpTree& t,
                                                    const KernelSequenceOptions& o);

}  // namespace trainprof::analysis
