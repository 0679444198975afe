#include "analysis/peaks.h"

#include <array>
#include <vector>

#include "base/text.h"

namespace trainprof::analysis {

namespace {

// One row of the table: the device name holds `match` (lower case) and not `unless`.
struct PeakRow {
  std::string_view match, unless;
  PeakTflops peak;
};

// NVIDIA's datasheets (SXM parts unless the name says PCIe; B200 and GB200 per GPU of an HGX
// B200 / GB200 NVL72, sparse figures halved), AMD's Instinct datasheets (fp32 on the matrix
// cores). First match wins, so "gb200" comes before "b200" and "l40s" before "l4".
const std::vector<PeakRow>& PeakTable() {
  static const std::vector<PeakRow> kRows = {
      {"gb200", "", {"GB200", 80, 1250, 2500, 5000, 10000, 8.0}},
      {"b200", "", {"B200", 75, 1125, 2250, 4500, 9000, 8.0}},
      {"h200", "", {"H200", 67, 494.7, 989.4, 1978.9, 0, 4.8}},
      {"h100 pcie", "", {"H100 PCIe", 51, 378, 756, 1513, 0, 2.0}},
      {"h100", "", {"H100 SXM", 67, 494.7, 989.4, 1978.9, 0, 3.35}},
      {"a100-sxm4-40gb", "", {"A100 SXM 40GB", 19.5, 156, 312, 0, 0, 1.555}},
      {"a100", "pcie", {"A100 SXM", 19.5, 156, 312, 0, 0, 2.039}},
      {"a100", "", {"A100 PCIe", 19.5, 156, 312, 0, 0, 1.935}},
      {"v100", "pcie", {"V100 SXM2", 15.7, 0, 125, 0, 0, 0.9}},
      {"v100", "", {"V100 PCIe", 14, 0, 112, 0, 0, 0.9}},
      {"l40s", "", {"L40S", 91.6, 183, 362, 733, 0, 0.864}},
      {"l4", "", {"L4", 30.3, 60, 121, 242.5, 0, 0.3}},
      {"a10g", "", {"A10G", 31.2, 35, 70, 0, 0, 0.6}},
      {"a10", "", {"A10", 31.2, 62.5, 125, 0, 0, 0.6}},
      {"t4", "", {"T4", 8.1, 0, 65, 0, 0, 0.32}},
      {"mi355", "", {"MI355X", 157.3, 0, 2516.6, 5033.2, 10066.4, 8.0}},
      {"mi350", "", {"MI350X", 144.2, 0, 2306.9, 4613.7, 9227.5, 8.0}},
      {"mi325", "", {"MI325X", 163.4, 653.7, 1307.4, 2614.9, 0, 6.0}},
      {"mi300", "", {"MI300X", 163.4, 653.7, 1307.4, 2614.9, 0, 5.3}},
      {"mi250", "", {"MI250X", 95.7, 0, 383, 0, 0, 3.2}},
      {"mi210", "", {"MI210", 45.3, 0, 181, 0, 0, 1.6}},
  };
  return kRows;
}

}  // namespace

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp16:
      return "fp16/bf16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kFp4:
      return "fp4";
    case Precision::kUnknown:
      break;
  }
  return "unknown";
}

Precision PrecisionOf(std::string_view t) {
  if (t == "float" || t == "c10::Float" || t == "Float") return Precision::kFp32;
  if (t.find("Half") != std::string_view::npos || t.find("BFloat16") != std::string_view::npos)
    return Precision::kFp16;
  if (t.find("Float8") != std::string_view::npos) return Precision::kFp8;
  if (t.find("Float4") != std::string_view::npos) return Precision::kFp4;
  return Precision::kUnknown;
}

double PeakTflops::For(Precision p) const {
  switch (p) {
    case Precision::kFp32:
      return fp32;
    case Precision::kTf32:
      return tf32 > 0 ? tf32 : fp32;
    case Precision::kFp16:
      return fp16;
    case Precision::kFp8:
      return fp8;
    case Precision::kFp4:
      return fp4;
    case Precision::kUnknown:
      break;
  }
  return 0;
}

PeakTflops PeakFor(std::string_view name) {
  const std::string low = base::AsciiLower(name);
  for (const PeakRow& r : PeakTable()) {
    if (low.find(r.match) == std::string::npos) continue;
    if (!r.unless.empty() && low.find(r.unless) != std::string::npos) continue;
    return r.peak;
  }
  return {};
}

}  // namespace trainprof::analysis
