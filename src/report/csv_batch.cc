#include "report/csv_batch.h"

#include <algorithm>
#include <utility>

namespace trainprof::report {
namespace {

// Parts a chunk: a few ranks' rows of one table are about 100 KB at most, and two threads in
// neighbouring chunks hold at most twice this many ranks' detail.
constexpr size_t kPartsPerChunk = 8;
constexpr size_t kNoChunk = static_cast<size_t>(-1);

}  // namespace

// What one thread in Work() keeps: the chunk whose parts it holds ready, and its buffers for
// rows and text, reused item after item (a new string each item was new pages each time).
struct CsvBatch::Held {
  size_t chunk = kNoChunk;
  std::vector<std::vector<Value>> block;
  std::string text;
};

CsvBatch::CsvBatch(const std::vector<const Table*>& tables, const std::vector<std::string>& paths)
    : tables_(tables), out_(new Output[tables.size()]) {
  for (size_t i = 0; i < tables_.size(); ++i) {
    Output& o = out_[i];
    o.status = o.file.Open(paths[i]);
    if (!o.status.ok()) continue;
    AppendCsvHeader(o.text, *tables_[i]);
    open_.push_back(i);
  }
  if (open_.empty()) return;
  parts_ = tables_[open_[0]]->source->parts();
  chunks_ = (parts_ + kPartsPerChunk - 1) / kPartsPerChunk;
  rendered_.reset(new std::atomic<size_t>[chunks_]());
  if (chunks_ == 0) {  // no rows: each file is its header and footer
    for (size_t i : open_) Deliver(0, i, "");
  }
}

CsvBatch::~CsvBatch() = default;

void CsvBatch::Work() {
  if (open_.empty()) return;
  const RowSource& lead = *tables_[open_[0]]->source;
  // Both threads work in the same chunk; the one that readies it from its last part reads
  // ranks back while the other reads from its first, not waiting for each.
  const bool backwards = workers_++ % 2 == 1;
  Held held;
  auto let_go = [&] {
    if (held.chunk == kNoChunk) return;
    const auto [first, end] = PartsOf(held.chunk);
    for (size_t p = first; p < end; ++p) lead.EndPart(p);
    held.chunk = kNoChunk;
  };
  const size_t items = chunks_ * open_.size();
  for (size_t k = next_++; k < items; k = next_++) {
    const size_t chunk = k / open_.size(), table = open_[k % open_.size()];
    if (chunk != held.chunk) {
      let_go();
      const auto [first, end] = PartsOf(chunk);
      for (size_t i = 0; i < end - first; ++i) lead.BeginPart(backwards ? end - 1 - i : first + i);
      held.chunk = chunk;
    }
    Render(chunk, table, held);
    Deliver(chunk, table, held.text);
    if (++rendered_[chunk] < open_.size()) continue;
    // No item of the chunk is left: its parts are written (each let go at its last EndPart).
    const auto [first, end] = PartsOf(chunk);
    for (size_t p = first; p < end; ++p) lead.PartWritten(p);
  }
  let_go();
}

std::pair<size_t, size_t> CsvBatch::PartsOf(size_t chunk) const {
  return {chunk * kPartsPerChunk, std::min(parts_, (chunk + 1) * kPartsPerChunk)};
}

// The table's rows of the chunk, as CSV text, into held.text.
void CsvBatch::Render(size_t chunk, size_t table, Held& held) const {
  const Table& t = *tables_[table];
  held.text.clear();
  const auto [first, end] = PartsOf(chunk);
  // Ready while Work() holds the chunk: a batch's sources share one readying per part
  // (RowSource::batch), so the table's own BeginPart would only count, under the lock a
  // reading-back thread holds.
  for (size_t p = first; p < end; ++p) {
    held.block.clear();
    t.source->AppendRows(p, held.block);
    AppendCsvRows(held.text, t, held.block);
  }
}

// The chunk goes to the file when the file has every chunk before it; the last one adds the
// footer and commits.
void CsvBatch::Deliver(size_t chunk, size_t table, const std::string& text) {
  Output& o = out_[table];
  std::lock_guard<std::mutex> lock(o.mu);
  if (chunk != o.next) {
    o.early.emplace(chunk, text);
    return;
  }
  o.text += text;
  ++o.next;
  for (auto e = o.early.begin(); e != o.early.end() && e->first == o.next; e = o.early.erase(e)) {
    o.text += e->second;
    ++o.next;
  }
  const bool last = o.next >= chunks_;
  if (last) AppendCsvRows(o.text, *tables_[table], tables_[table]->footer);
  if (last || o.text.size() >= kCsvFlushBytes) o.file.Write(o.text), o.text.clear();
  if (last) o.status = o.file.Commit();
}

}  // namespace trainprof::report
