#include "analysis/ranks/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_map>

#include "analysis/kernel_class.h"
#include "base/stats.h"

namespace trainprof::analysis {

namespace {

// Calls put(c) with each byte of `s` lower-cased, less '_', ' ' and ':' ("c10::BFloat16" ->
// "c10bfloat16", "all_reduce" -> "allreduce").
template <class Put>
void ForNormalized(std::string_view s, Put put) {
  for (char c : s)
    if (c != '_' && c != ' ' && c != ':')
      put(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
}

std::string Normalized(std::string_view s) {
  std::string out;
  ForNormalized(s, [&](char c) { out += c; });
  return out;
}

std::string TypeFromText(const std::string& n) {
  static const char* kTypes[] = {"allreduce", "allgather", "reducescatter", "alltoall",
                                 "broadcast", "reduce",    "sendrecv",      "send",
                                 "recv",      "barrier",   "gather",        "scatter"};
  for (const char* t : kTypes)
    if (n.starts_with(t)) return t;
  return "";
}

// A communication kernel of one rank, before matching.
struct RankOp {
  int64_t issue_ns = 0;  // its launch call's start, else its own start
  uint32_t event = 0;
  const trace::CollectiveArgs* args = nullptr;
};

std::vector<RankOp> CommKernels(const trace::TraceModel& m) {
  std::vector<RankOp> ops;
  const std::vector<bool> comm = CommunicationNames(m);
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != trace::EventKind::kKernel || !comm[m.name[i]]) continue;
    int32_t l = m.launcher[i];
    ops.push_back({l >= 0 ? m.ts_ns[static_cast<size_t>(l)] : m.ts_ns[i], static_cast<uint32_t>(i),
                   m.CollectiveOf(i)});
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const RankOp& a, const RankOp& b) { return a.issue_ns < b.issue_ns; });
  return ops;
}

std::string NameOr(const trace::TraceModel& m, uint32_t id, std::string fallback) {
  return id == trace::kNoName ? fallback : m.names[id];
}

// The collective's identity within its group on every rank: its key and how it is known.
void SetMatchKey(const trace::TraceModel& m, const RankOp& op, int64_t issue,
                 trace::NameTable& names, RankCommOp& r) {
  const trace::CollectiveArgs* a = op.args;
  if (a && a->seq >= 0) {
    r.key_kind = CommKey::kSeq, r.key = a->seq;
  } else if (a && a->comms_id != trace::kNoName) {
    r.key_kind = CommKey::kCommsId, r.key = names.Intern(m.names[a->comms_id]);
  } else {
    r.key_kind = CommKey::kIssue, r.key = issue;
  }
}

void Describe(const std::vector<RankInfo>& ranks, const CommOpsOf& comm_ops, Collective* c) {
  std::sort(c->ops.begin(), c->ops.end(),
            [](const CommOp& a, const CommOp& b) { return a.rank < b.rank; });
  c->late = 0;
  for (size_t i = 1; i < c->ops.size(); ++i)
    if (c->ops[i].dur_ns() < c->ops[c->late].dur_ns()) c->late = i;
  c->transfer_ns = c->ops[c->late].dur_ns();
  const RankComms& of = comm_ops[c->ops.front().model];
  const RankCommOp& first = (*of.ops)[c->ops.front().event];
  c->type = (*of.names)[first.type];
  c->bytes = first.bytes;
  c->group_size = first.group_size;
  if (c->group_size < static_cast<int64_t>(c->ops.size()))
    c->group_size = static_cast<int64_t>(c->ops.size());
  const std::string& host = ranks[c->ops.front().model].host_name;
  for (const CommOp& op : c->ops)
    c->inter_node |=
        !host.empty() && !ranks[op.model].host_name.empty() && ranks[op.model].host_name != host;
}

std::vector<ClockOffset> EstimateOffsets(const std::vector<RankInfo>& models,
                                         const std::vector<Collective>& all) {
  std::vector<std::vector<int64_t>> diffs(models.size());
  for (const Collective& c : all) {
    auto ref =
        std::find_if(c.ops.begin(), c.ops.end(), [](const CommOp& op) { return op.model == 0; });
    if (ref == c.ops.end()) continue;
    for (const CommOp& op : c.ops) diffs[op.model].push_back(op.end_ns - ref->end_ns);
  }
  std::vector<ClockOffset> out;
  out.reserve(models.size());  // one a rank, held until the report: no doubling's slack
  for (size_t i = 0; i < models.size(); ++i) {
    ClockOffset o{models[i].rank};
    std::vector<int64_t>& d = diffs[i];
    o.samples = static_cast<int64_t>(d.size());
    if (i == 0 || d.empty()) {
      out.push_back(o);
      continue;
    }
    std::vector<int64_t> sorted = d;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    o.offset_ns = sorted[sorted.size() / 2];
    double sq = 0;
    for (int64_t x : d) {
      int64_t r = std::abs(x - o.offset_ns);
      sq += static_cast<double>(r) * static_cast<double>(r);
      o.residual_max_ns = std::max(o.residual_max_ns, r);
    }
    o.residual_rms_ns = std::sqrt(sq / static_cast<double>(d.size()));
    out.push_back(o);
  }
  return out;
}

}  // namespace

std::vector<bool> CommunicationNames(const trace::TraceModel& m) {
  std::vector<bool> out(m.names.size()), checked(m.names.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const uint32_t n = m.name[i];
    if (m.kind[i] != trace::EventKind::kKernel || checked[n]) continue;
    checked[n] = true;
    out[n] = IsCommunicationKernel(m.names[n]);
  }
  return out;
}

int64_t Collective::caused_wait_ns() const {
  int64_t sum = 0;
  for (size_t i = 0; i < ops.size(); ++i) sum += wait_ns(i);
  return sum;
}

double Collective::BusFactor() const {
  double n = static_cast<double>(std::max<int64_t>(group_size, 2));
  if (type == "allreduce") return 2 * (n - 1) / n;
  if (type == "allgather" || type == "reducescatter" || type == "alltoall") return (n - 1) / n;
  return 1;
}

double Collective::algbw() const {
  if (bytes <= 0 || transfer_ns <= 0) return 0;
  return static_cast<double>(bytes) / (static_cast<double>(transfer_ns) / 1e9);
}

std::string CollectiveType(std::string_view arg, std::string_view kernel_name) {
  if (std::string t = TypeFromText(Normalized(arg)); !t.empty()) return t;
  std::string_view k = kernel_name;
  if (k.starts_with("void ")) k.remove_prefix(5);
  size_t at = k.find("Kernel_");
  if (at == std::string_view::npos) return "";
  k.remove_prefix(at + 7);
  return TypeFromText(Normalized(k.substr(0, k.find_first_of("_(<"))));
}

int64_t DtypeBytes(std::string_view dtype) {
  // Normalized into a buffer on the stack: FLOPs ask for every input of every operator, and a
  // string made for each was 3 % of a rank's analysis. Every dtype named below fits; a longer
  // one is cut, and then only the "float8" prefix can match it.
  char buf[32];
  size_t n = 0;
  ForNormalized(dtype, [&](char c) {
    if (n < sizeof buf) buf[n++] = c;
  });
  std::string_view d(buf, n);
  if (d.starts_with("c10")) d.remove_prefix(3);
  if (d == "float" || d == "float32" || d == "int" || d == "int32" || d == "uint32") return 4;
  if (d == "double" || d == "float64" || d == "long" || d == "longint" || d == "int64" ||
      d == "uint64" || d == "complexfloat")
    return 8;
  if (d == "half" || d == "float16" || d == "bfloat16" || d == "short" || d == "int16") return 2;
  if (d == "char" || d == "byte" || d == "bool" || d == "int8" || d == "uint8" ||
      d == "signedchar" || d == "unsignedchar" || d.starts_with("float8"))
    return 1;
  if (d == "complexdouble") return 16;
  return 0;
}

std::vector<RankCommOp> RankCommOps(const trace::TraceModel& m, CommNames& names) {
  std::vector<RankCommOp> out;
  trace::NameTable index;  // `names` as they are made: each name's index
  for (const std::string& n : names) index.Intern(n);
  std::unordered_map<uint32_t, int64_t> issued;  // per group
  for (const RankOp& op : CommKernels(m)) {
    const trace::CollectiveArgs* a = op.args;
    RankCommOp r;
    r.group = index.Intern(a ? NameOr(m, a->process_group, "") : "");
    SetMatchKey(m, op, issued[r.group]++, index, r);
    r.type =
        index.Intern(CollectiveType(a ? NameOr(m, a->collective, "") : "", m.name_of(op.event)));
    if (a && a->dtype != trace::kNoName) {
      int64_t n = std::max(a->in_nelems, a->out_nelems);
      int64_t b = DtypeBytes(m.names[a->dtype]);
      if (n >= 0 && b > 0) r.bytes = n * b;
    }
    r.group_size = a && a->group_size > 0 ? a->group_size : m.world_size;
    r.start_ns = m.ts_ns[op.event];
    r.end_ns = m.end_ns(op.event);
    out.push_back(r);
  }
  for (size_t i = names.size(); i < index.size(); ++i)
    names.push_back(index[static_cast<uint32_t>(i)]);
  return out;
}

namespace {

// The key matching one op across ranks: its group's name, how it is known, and its key (a
// comms id by its text).
std::string MatchMapKey(const RankCommOp& op, const CommNames& names) {
  std::string k = names[op.group];
  k += '\x1f';
  k += static_cast<char>(op.key_kind);
  if (op.key_kind == CommKey::kCommsId) return k + names[static_cast<size_t>(op.key)];
  k.append(reinterpret_cast<const char*>(&op.key), sizeof op.key);
  return k;
}

}  // namespace

CollectivesResult MatchCollectives(const std::vector<RankInfo>& ranks, const CommOpsOf& comm_ops) {
  CollectivesResult res;
  std::unordered_map<std::string, size_t> index;  // group + key -> collective
  bool any_seq = false;
  for (size_t mi = 0; mi < ranks.size(); ++mi) {
    const std::vector<RankCommOp>& ops = *comm_ops[mi].ops;
    const CommNames& names = *comm_ops[mi].names;
    for (size_t k = 0; k < ops.size(); ++k) {
      const RankCommOp& op = ops[k];
      any_seq |= op.by_seq();
      auto [it, fresh] = index.try_emplace(MatchMapKey(op, names), res.collectives.size());
      if (fresh) res.collectives.push_back({names[op.group], CommKeyText(op, names)});
      res.collectives[it->second].ops.push_back(
          {mi, ranks[mi].rank, static_cast<uint32_t>(k), op.start_ns, op.end_ns});
    }
  }
  std::vector<Collective> kept;
  for (Collective& c : res.collectives) {
    if (c.ops.size() < 2) {
      res.unmatched += static_cast<int64_t>(c.ops.size());
      continue;
    }
    Describe(ranks, comm_ops, &c);
    kept.push_back(std::move(c));
  }
  res.collectives = std::move(kept);
  res.by_sequence = any_seq;
  res.offsets = EstimateOffsets(ranks, res.collectives);
  return res;
}

// Collectives end together on every rank, so after the offsets their ends agree to within the
// clocks' drift. A residual larger than the median transfer means the kernels matched are not
// the same collectives (order of issue across different groups, or capture windows that differ).
bool MatchDoubtful(const CollectivesResult& c) {
  if (c.collectives.empty()) return false;
  std::vector<double> transfers;
  for (const Collective& x : c.collectives) transfers.push_back(static_cast<double>(x.transfer_ns));
  double residual = 0;
  for (const ClockOffset& o : c.offsets)
    residual = std::max(residual, static_cast<double>(o.residual_max_ns));
  return residual > base::Median(transfers);
}

CollectivesResult MatchCollectives(const std::vector<trace::TraceModel>& models) {
  std::vector<CommNames> names(models.size(), CommNames{""});
  std::vector<std::vector<RankCommOp>> ops;
  CommOpsOf of;
  ops.reserve(models.size());
  for (size_t i = 0; i < models.size(); ++i) {
    ops.push_back(RankCommOps(models[i], names[i]));
    of.push_back({&ops.back(), &names[i]});
  }
  return MatchCollectives(InfosOf(models), of);
}

}  // namespace trainprof::analysis
