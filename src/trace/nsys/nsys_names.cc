#include "trace/nsys/nsys_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <span>

namespace trainprof::trace {
namespace {

// The export's ENUM_CUDA_MEMCPY_OPER (CUPTI's memcpy kinds) and ENUM_CUDA_MEM_KIND (its own
// order, Unknown last), in Kineto's words. The first entry is said for a value out of range.
constexpr std::array<std::string_view, 11> kCopyKinds{
    "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
constexpr std::array<std::string_view, 8> kMemoryKinds{"Pageable",       "Pinned",  "Device",
                                                       "Array",          "Managed", "Device Static",
                                                       "Managed Static", "Unknown"};

std::string_view KindName(int64_t k, std::span<const std::string_view> names,
                          std::string_view unknown) {
  return k >= 0 && static_cast<size_t>(k) < names.size() ? names[static_cast<size_t>(k)] : unknown;
}

constexpr std::array<std::string_view, 4> kNvtxFields{
    ", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};

}  // namespace

std::string_view RuntimeName(std::string_view name) {
  const size_t v = name.rfind("_v");
  if (v == std::string_view::npos || name.size() - v - 2 < 4) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  return name.substr(0, v);
}

NvtxRange ParseNvtxRange(std::string_view text) {
  NvtxRange r;
  size_t first = text.size();
  for (std::string_view f : kNvtxFields) first = std::min(first, text.find(f));
  r.name = text.substr(0, first);
  r.op = text.find(kNvtxFields[0]) != std::string_view::npos ||
         text.find(kNvtxFields[1]) != std::string_view::npos;
  const size_t s = text.find(kNvtxFields[2]);
  if (s != std::string_view::npos) {
    const size_t from = s + kNvtxFields[2].size();
    const size_t to = text.find(kNvtxFields[3], from);
    r.sizes = text.substr(from, to == std::string_view::npos ? std::string_view::npos : to - from);
  }
  return r;
}

std::string MemcpyName(int64_t copy_kind, int64_t src_kind, int64_t dst_kind) {
  return fmt::format("Memcpy {} ({} -> {})", KindName(copy_kind, kCopyKinds, "Unknown"),
                     KindName(src_kind, kMemoryKinds, "Unknown"),
                     KindName(dst_kind, kMemoryKinds, "Unknown"));
}

std::string MemsetName(int64_t mem_kind) {
  return fmt::format("Memset ({})", KindName(mem_kind, kMemoryKinds, "Unknown"));
}

}  // namespace trainprof::trace
