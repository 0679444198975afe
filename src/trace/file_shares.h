// Which MPI process of `analyze --mpi` reads which trace file. Every process lists the path
// itself; the listings are merged at process 0 (MergeListings), so traces on node-local disks,
// which only their node's processes see, are read where they lie, and on a shared file system,
// where every process sees every file, the merge is each process's own listing. Each file then
// goes to one process that sees it (FileOwners): its own rank's when the file names say which
// rank each is (ShareOfFiles). The merged listing and its owners travel as bytes
// (EncodeSharedListing).
//
//   SharedListing s = MergeListings({listing_of_process_0, listing_of_process_1});
//   for (size_t r = 0; r < s.listing.runs.size(); ++r) read(s.listing.runs[r], s.owners[r]);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_files.h"
#include "trainprof/status.h"

namespace trainprof::trace {

// The rank number a trace file's name carries ("rank12.pt.trace.json", "job_rank-3.json": the
// digits after "rank", "rank_" or "rank-", any case), else -1.
int64_t RankInFileName(std::string_view path);

// The files (indices into `files`, ascending) process `process` of `processes` reads when every
// process sees every file. When every name carries a rank number (RankInFileName), each a
// different one, rank r's file goes to process r * processes / world (world: the highest rank +
// 1): with a process per rank each reads its own rank's file, with a process per node its node's
// ranks (as torchrun numbers them). Else files process, process + processes, ... in order.
std::vector<size_t> ShareOfFiles(const std::vector<std::string>& files, int process, int processes);

// The processes' listings merged: the runs by folder (sorted), each run's files the union of
// what the processes saw (sorted), and per run and file the processes that saw it. `skipped`
// is every process's, each line once.
struct SharedListing {
  TraceListing listing;
  std::vector<std::vector<std::vector<int>>> seen_by;  // [run][file]: processes, ascending
  std::vector<std::vector<int>> owners;                // [run][file]: the process that reads it
};
SharedListing MergeListings(const std::vector<TraceListing>& per_process);

// When every process listed the same (a shared file system): `l` as it is, each file to the
// process ShareOfFiles gives it.
SharedListing SameEverywhere(TraceListing l, int processes);

// Sets `s.owners`: each file to the process ShareOfFiles gives it when that process sees it,
// else to the process seeing it that has the fewest files of the run so far (the lowest first).
void AssignOwners(SharedListing& s, int processes);

// The files of run `run` that `process` reads (indices into its files, ascending).
std::vector<size_t> FilesOf(const SharedListing& s, size_t run, int process);

// A listing as bytes, and back (what a process sends to process 0). Errors: bytes cut short.
std::string EncodeListing(const TraceListing& l);
StatusOr<TraceListing> DecodeListing(std::string_view bytes);
// The merged listing with its owners (what process 0 sends to every process).
std::string EncodeSharedListing(const SharedListing& s);
StatusOr<SharedListing> DecodeSharedListing(std::string_view bytes);

}  // namespace trainprof::trace
