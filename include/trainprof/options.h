// Options of a profiling Session, with the keys of anemoi-training's
// diagnostics.benchmark_profiler section. Every key is listed in docs/config.md.
//
//   trainprof::Options o;                       // defaults: time + speed reports on
//   o.output.name = "my-model";
//   auto loaded = trainprof::LoadOptionsFile("profiler.yaml");  // or from YAML
#pragma once

#include <cstdint>
#include <string>

#include "trainprof/schedule.h"
#include "trainprof/status.h"

namespace trainprof {

struct Options {
  struct Time {
    bool enabled = true;
    bool verbose = false;      // false: the concise set of actions; true: every action
    bool cuda_events = false;  // GPU time per action from CUDA events around each scope
  } time;
  struct Speed {
    bool enabled = true;
    int64_t warmup_batches = 5;  // batches left out of the averaged throughput, per stage
  } speed;
  struct Memory {  // operator and memory report (LibTorch: trainprof/torch.h)
    bool enabled = false;
    int64_t steps = 5;   // steps the operator observer records
    int64_t warmup = 2;  // steps observed then discarded before those
    bool extra_plots = false;
    bool trace_rank0_only = false;
    bool record_shapes = false;         // input shapes of each call (trace.json "Input Dims")
    bool group_by_input_shape = false;  // one table row per (operator, input shapes)
    std::string sort_by = "cpu_time_total";
    int64_t row_limit = 20;  // operators printed in the terminal
    // GPU kernels per operator through CUPTI (LibTorch): "auto" where a CUDA driver is, "on"
    // (say why when it cannot), "off".
    std::string cuda_activity = "auto";
  } memory;
  struct System {  // system report (issue: system sampler)
    bool enabled = false;
    double interval_s = 1.0;
  } system;
  struct ModelSummary {
    bool enabled = false;
    int64_t depth = 3;  // module levels shown (torchinfo's depth)
  } model_summary;
  struct Snapshot {  // CUDA memory snapshot
    bool enabled = false;
    int64_t steps = 4;
    int64_t warmup = 0;
    std::string stacks = "python";  // "python" or "all" (C++ frames too: slow to dump)
    int64_t max_entries = 0;        // the history's ring buffer; 0 = sized from a measured step
    bool oom = true;                // a snapshot written when the allocator runs out of memory
  } snapshot;
  Schedule schedule;
  struct Output {
    std::string dir = "runs";  // run folders are created below it
    std::string name = "run";  // folder: <dir>/<UTC time>-<name>
    std::string run_dir;       // if set, use exactly this folder (created if missing)
    bool trace = true;         // write trace.json
    bool csv = true;           // write one CSV per table
    bool print = true;         // print the reports when the session finishes
    // With run_dir: a folder holding an earlier run is emptied of its files first (without it,
    // such a folder is refused).
    bool overwrite = false;
    // Exporters (report/run_writers.h), off when empty: an MLflow file store the run is added
    // to (its experiment: mlflow_experiment, else the run's name), and a TensorBoard log dir
    // that gets an events.out.tfevents.* file.
    std::string mlflow;
    std::string mlflow_experiment;
    std::string tensorboard;
  } output;
  struct Live {                      // the live view while the run trains (session/live.h)
    std::string mode = "off";        // "off", "lines" (a line a tick), "view" (redrawn in place)
    double interval_s = 1.0;         // seconds between two snapshots
    int64_t port = 0;                // the live page's port (0: no page)
    std::string host = "127.0.0.1";  // where the page listens: loopback unless asked
  } live;
  struct Buffer {
    int64_t events_per_thread = 1 << 20;  // recorded scopes kept per thread; more are dropped
  } buffer;
};

// Reads a YAML file holding only profiler keys. Errors name the file, line and column; an
// unknown key is named with the nearest valid key.
StatusOr<Options> LoadOptionsFile(const std::string& path);

}  // namespace trainprof
