#include "trace/file_shares.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "base/bytes.h"

namespace trainprof::trace {

int64_t RankInFileName(std::string_view path) {
  std::string name(path.substr(path.find_last_of('/') + 1));  // npos + 1: the whole path
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t at = name.find("rank"); at != std::string::npos; at = name.find("rank", at + 1)) {
    size_t d = at + 4;
    if (d < name.size() && (name[d] == '_' || name[d] == '-')) ++d;
    size_t end = d;
    while (end < name.size() && end - d < 9 && std::isdigit(static_cast<unsigned char>(name[end])))
      ++end;
    if (end > d) return std::stoll(name.substr(d, end - d));
  }
  return -1;
}

namespace {

// Per file, the process that reads it when every process sees every file: by the rank its name
// carries, else in turn. Each name is read once.
std::vector<int> PreferredOwners(const std::vector<std::string>& files, int processes) {
  std::vector<int64_t> ranks;
  std::set<int64_t> distinct;
  for (const std::string& f : files)
    ranks.push_back(RankInFileName(f)), distinct.insert(ranks.back());
  const bool by_rank = !files.empty() && distinct.size() == files.size() && *distinct.begin() >= 0;
  const auto n = static_cast<size_t>(processes);
  std::vector<int> owners(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const size_t world = by_rank ? static_cast<size_t>(*distinct.rbegin()) + 1 : 0;
    owners[i] = static_cast<int>(by_rank ? static_cast<size_t>(ranks[i]) * n / world : i % n);
  }
  return owners;
}

}  // namespace

std::vector<size_t> ShareOfFiles(const std::vector<std::string>& files, int process,
                                 int processes) {
  const std::vector<int> owners = PreferredOwners(files, processes);
  std::vector<size_t> out;
  for (size_t i = 0; i < owners.size(); ++i)
    if (owners[i] == process) out.push_back(i);
  return out;
}

namespace {

// An input's file: the input less its "#part" (an Nsight Systems export's processes), if any.
std::string_view FileOfInput(std::string_view input) {
  const size_t hash = input.rfind('#'), slash = input.rfind('/');
  return hash == std::string_view::npos || (slash != std::string_view::npos && hash < slash)
             ? input
             : input.substr(0, hash);
}

// A run's inputs as the processes listed them: who saw each, and when it was first seen.
struct SeenInput {
  std::vector<int> by;
  size_t first = 0;
};

}  // namespace

SharedListing MergeListings(const std::vector<TraceListing>& per_process) {
  std::map<std::string, std::map<std::string, SeenInput>> runs;  // dir -> input -> seen
  std::set<std::string> skipped;
  SharedListing out;
  size_t order = 0;
  for (size_t p = 0; p < per_process.size(); ++p) {
    for (const TraceRun& run : per_process[p].runs) {
      auto& inputs = runs[run.dir];
      for (const std::string& f : run.files) {
        auto [it, fresh] = inputs.try_emplace(f);
        if (fresh) it->second.first = order++;
        std::vector<int>& by = it->second.by;
        if (by.empty() || by.back() != static_cast<int>(p)) by.push_back(static_cast<int>(p));
      }
    }
    for (const std::string& why : per_process[p].skipped)
      if (skipped.insert(why).second) out.listing.skipped.push_back(why);
  }
  for (auto& [dir, inputs] : runs) {
    // As ListTraceRuns orders them: by file, a file's parts in the order it lists them.
    std::vector<std::pair<std::string, SeenInput>> sorted(inputs.begin(), inputs.end());
    std::ranges::stable_sort(sorted, [](const auto& a, const auto& b) {
      const std::string_view fa = FileOfInput(a.first), fb = FileOfInput(b.first);
      return fa != fb ? fa < fb : a.second.first < b.second.first;
    });
    TraceRun& run = out.listing.runs.emplace_back();
    run.dir = dir;
    auto& seen = out.seen_by.emplace_back();
    for (auto& [f, in] : sorted) run.files.push_back(f), seen.push_back(std::move(in.by));
  }
  return out;
}

SharedListing SameEverywhere(TraceListing l, int processes) {
  SharedListing s;
  s.listing = std::move(l);
  for (const TraceRun& run : s.listing.runs)
    s.owners.push_back(PreferredOwners(run.files, processes));
  return s;
}

void AssignOwners(SharedListing& s, int processes) {
  s.owners.assign(s.listing.runs.size(), {});
  for (size_t r = 0; r < s.listing.runs.size(); ++r) {
    const std::vector<std::string>& files = s.listing.runs[r].files;
    const std::vector<int> preferred = PreferredOwners(files, processes);
    std::vector<size_t> load(static_cast<size_t>(processes), 0);
    std::vector<int>& owners = s.owners[r];
    for (size_t i = 0; i < files.size(); ++i) {
      const std::vector<int>& seen = s.seen_by[r][i];
      int owner = preferred[i];
      if (!std::binary_search(seen.begin(), seen.end(), owner)) {
        owner = *std::min_element(seen.begin(), seen.end(), [&](int a, int b) {
          return load[static_cast<size_t>(a)] < load[static_cast<size_t>(b)];
        });
      }
      ++load[static_cast<size_t>(owner)];
      owners.push_back(owner);
    }
  }
}

std::vector<size_t> FilesOf(const SharedListing& s, size_t run, int process) {
  std::vector<size_t> out;
  const std::vector<int>& owners = s.owners.at(run);
  for (size_t i = 0; i < owners.size(); ++i)
    if (owners[i] == process) out.push_back(i);
  return out;
}

namespace {

void PutTexts(std::string& out, const std::vector<std::string>& v) {
  base::PutU64(out, v.size());
  for (const std::string& s : v) base::PutText(out, s);
}

std::vector<std::string> TakeTexts(base::ByteReader& r) {
  std::vector<std::string> v(r.Count(8));
  for (std::string& s : v) s = r.Text();
  return v;
}

void PutListing(std::string& out, const TraceListing& l) {
  base::PutU64(out, l.runs.size());
  for (const TraceRun& run : l.runs) base::PutText(out, run.dir), PutTexts(out, run.files);
  PutTexts(out, l.skipped);
}

TraceListing TakeListing(base::ByteReader& r) {
  TraceListing l;
  l.runs.resize(r.Count(16));
  for (TraceRun& run : l.runs) run.dir = r.Text(), run.files = TakeTexts(r);
  l.skipped = TakeTexts(r);
  return l;
}

Status CutShort(const base::ByteReader& r, std::string_view what) {
  if (r.done()) return Status::Ok();
  return InvalidArgument(std::string(what) + " from another MPI process is cut short or corrupt");
}

}  // namespace

std::string EncodeListing(const TraceListing& l) {
  std::string out;
  PutListing(out, l);
  return out;
}

StatusOr<TraceListing> DecodeListing(std::string_view bytes) {
  base::ByteReader r{bytes};
  TraceListing l = TakeListing(r);
  TRAINPROF_RETURN_IF_ERROR(CutShort(r, "a listing"));
  return l;
}

std::string EncodeSharedListing(const SharedListing& s) {
  std::string out;
  PutListing(out, s.listing);
  for (const std::vector<int>& owners : s.owners) {
    base::PutU64(out, owners.size());
    for (int o : owners) base::PutU64(out, static_cast<uint64_t>(o));
  }
  return out;
}

StatusOr<SharedListing> DecodeSharedListing(std::string_view bytes) {
  base::ByteReader r{bytes};
  SharedListing s;
  s.listing = TakeListing(r);
  for (const TraceRun& run : s.listing.runs) {
    std::vector<int>& owners = s.owners.emplace_back(r.Count(8));
    for (int& o : owners) o = static_cast<int>(r.U64());
    if (owners.size() != run.files.size()) r.ok = false;
  }
  TRAINPROF_RETURN_IF_ERROR(CutShort(r, "the shared listing"));
  return s;
}

}  // namespace trainprof::trace
