#include "record/options_schema.h"

namespace trainprof {

void AddOptionsKeys(base::ConfigSchema& s, Options& o) {
  constexpr int64_t kBig = int64_t{1} << 40;
  s.AddBool("time.enabled", &o.time.enabled,
            "Time report: time per action (mean, calls, total, % of wall time, min, median, p95, "
            "max), as Lightning's SimpleProfiler and anemoi's time report.");
  s.AddBool("time.verbose", &o.time.verbose,
            "false: the concise set of actions (training/validation loops, data loader, forward, "
            "backward, optimizer step and other top-level actions); true: every recorded action.");
  s.AddBool("time.cuda_events", &o.time.cuda_events,
            "GPU time per action: each recorded scope also records a CUDA event on the default "
            "stream as it begins and ends, read once at the end (no synchronization in the "
            "loop); needs a CUDA runtime and a GPU.");
  s.AddBool("speed.enabled", &o.speed.enabled,
            "Speed report: training, validation and data-loader throughput (batches/s and "
            "samples/s) and the throughput over time.");
  s.AddInt("speed.warmup_batches", &o.speed.warmup_batches, 0, kBig,
           "Batches at the start of each stage left out of the averaged throughput.");
  s.AddBool("memory.enabled", &o.memory.enabled,
            "Operator table and memory (LibTorch programs that attach a TorchProfiler; the "
            "built-in job does): per operator calls, self and total CPU time and memory, as "
            "PyTorch's key_averages().table(); activation memory per step, and the memory "
            "section of the recording (peak, what was live at it, the curve).");
  s.AddInt("memory.steps", &o.memory.steps, 1, kBig,
           "Steps the operator observer records (after memory.warmup).");
  s.AddInt("memory.warmup", &o.memory.warmup, 0, kBig,
           "Steps the operator observer runs and discards before it records (its first-call "
           "costs stay out of the report).");
  s.AddBool("memory.extra_plots", &o.memory.extra_plots,
            "Also write every allocation and free of the recorded steps (memory_events.csv: "
            "time, bytes, address, device, operator), besides the memory section's curve.");
  s.AddBool("memory.trace_rank0_only", &o.memory.trace_rank0_only,
            "Observe operators on rank 0 only (the rank is read from RANK, then SLURM_PROCID).");
  s.AddBool("memory.record_shapes", &o.memory.record_shapes,
            "Record the input shapes of each operator call, written into trace.json's operator "
            "events (\"Input Dims\"), as torch.profiler's record_shapes.");
  s.AddBool("memory.group_by_input_shape", &o.memory.group_by_input_shape,
            "One operator table row per operator and input shapes, as key_averages("
            "group_by_input_shape=True); needs memory.record_shapes.");
  s.AddString("memory.sort_by", &o.memory.sort_by, "Order of the operator table.",
              {"cpu_time_total", "self_cpu_time_total", "cuda_time_total", "self_cuda_time_total",
               "cpu_memory_usage", "self_cpu_memory_usage", "count"});
  s.AddInt("memory.row_limit", &o.memory.row_limit, 1, kBig,
           "Operators printed in the terminal; operators.csv and report.json have all.");
  s.AddString("memory.cuda_activity", &o.memory.cuda_activity,
              "GPU kernels, copies and memsets per operator through CUPTI (the LibTorch path, a "
              "build with TRAINPROF_WITH_CUPTI): the Self CUDA and CUDA total columns and the GPU "
              "events in trace.json. auto: where a CUDA driver is; on: also say why when it "
              "cannot run; off.",
              {"auto", "on", "off"});
  s.AddBool("system.enabled", &o.system.enabled,
            "System report: CPU, memory, process, disk, network, GPU (NVML) and energy, sampled "
            "by a background thread (docs/system-report.md).");
  s.AddDouble("system.interval_s", &o.system.interval_s, 0.05, 3600.0,
              "Seconds between two samples of the system report (10 Hz costs about 0.3 % of one "
              "core).");
  s.AddString("live.mode", &o.live.mode,
              "The live view while the run trains: every live.interval_s a snapshot (step, step "
              "time, samples/s, the loop's split into data wait / forward / backward / optimizer "
              "/ communication, GPUs, CPU and RSS, the verdict) written to live.json in the run "
              "folder (trainprof watch RUN_DIR reads it) and printed on stderr: lines (a line "
              "each time), view (the terminal's bottom rows redrawn in place, else lines), file "
              "(live.json only, nothing printed), off (docs/live.md).",
              {"off", "lines", "view", "file"});
  s.AddDouble("live.interval_s", &o.live.interval_s, 0.1, 3600.0,
              "Seconds between two snapshots of the live view.");
  s.AddInt("live.port", &o.live.port, 0, 65535,
           "Serves the live view as a web page on this port (http://live.host:PORT/), updated "
           "every second; 0: no page. A port in use is said in one line and the run goes on.");
  s.AddString("live.host", &o.live.host,
              "The address the live page listens on: 127.0.0.1 (this machine only) unless set, "
              "e.g. 0.0.0.0 to reach it from other machines.");
  s.AddBool("model_summary.enabled", &o.model_summary.enabled,
            "Model summary, as torchinfo: module tree, input and output shapes, parameters, "
            "mult-adds and estimated sizes (model_summary.txt).");
  s.AddInt("model_summary.depth", &o.model_summary.depth, 1, 100,
           "Module levels shown in the model summary (torchinfo's depth).");
  s.AddBool("snapshot.enabled", &o.snapshot.enabled,
            "CUDA memory snapshot (memory_snapshot.pickle, memory_snapshot_rank{N}.pickle with "
            "several ranks), analysed in the report and readable by pytorch.org/memory_viz; the "
            "Python Session with a CUDA torch >= 2.1 (the C++ Session needs a CUDA LibTorch).");
  s.AddInt("snapshot.steps", &o.snapshot.steps, 1, kBig, "Steps of allocator history recorded.");
  s.AddInt("snapshot.warmup", &o.snapshot.warmup, 0, kBig,
           "Steps before the allocator history starts.");
  s.AddString("snapshot.stacks", &o.snapshot.stacks,
              "Call stacks kept per allocation: python (fast to dump) or all (C++ frames too: a "
              "dump can take minutes).",
              {"python", "all"});
  s.AddInt("snapshot.max_entries", &o.snapshot.max_entries, 0, kBig,
           "Events the allocator history keeps (a ring buffer). 0: sized from the allocations of "
           "the step before recording starts, so whole steps are kept (1,000,000 when recording "
           "starts at step 0).");
  s.AddBool("snapshot.oom", &o.snapshot.oom,
            "Write memory_snapshot_oom.pickle (per rank: _rank{N}) when the allocator runs out of "
            "memory, and analyse it in the report.");
  s.AddInt("schedule.skip_first", &o.schedule.skip_first, 0, kBig,
           "Steps skipped before the first cycle (torch.profiler.schedule's skip_first).");
  s.AddInt("schedule.wait", &o.schedule.wait, 0, kBig, "Idle steps at the start of each cycle.");
  s.AddInt("schedule.warmup", &o.schedule.warmup, 0, kBig,
           "Steps recorded then discarded after the wait steps of each cycle.");
  s.AddInt("schedule.active", &o.schedule.active, 1, kBig, "Recorded steps of each cycle.");
  s.AddInt("schedule.repeat", &o.schedule.repeat, 0, kBig, "Cycles to run; 0 = forever.");
  s.AddString("output.dir", &o.output.dir,
              "Folder below which each run gets its folder, <dir>/<UTC time>-<name>/.");
  s.AddString("output.name", &o.output.name, "Suffix of the run folder's name.");
  s.AddString("output.run_dir", &o.output.run_dir,
              "Use exactly this run folder (created if missing) instead of <dir>/<time>-<name>.");
  s.AddBool("output.trace", &o.output.trace,
            "Write trace.json (Chrome trace: Perfetto UI, chrome://tracing).");
  s.AddBool("output.csv", &o.output.csv, "Write one CSV file per report table.");
  s.AddBool("output.print", &o.output.print, "Print the reports when the session finishes.");
  s.AddBool("output.overwrite", &o.output.overwrite,
            "With output.run_dir: a folder that holds an earlier run is emptied of that run's "
            "files first; without it, such a folder is refused.");
  s.AddString("output.mlflow", &o.output.mlflow,
              "Also add the run to this MLflow file store (mlruns/; open with "
              "MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri DIR); empty: off.");
  s.AddString("output.mlflow_experiment", &o.output.mlflow_experiment,
              "The MLflow experiment the run goes to; empty: the run's name (output.name).");
  s.AddString("output.tensorboard", &o.output.tensorboard,
              "Also write the run's scalars and text report as a TensorBoard events file in "
              "this log dir (tensorboard --logdir DIR); empty: off.");
  s.AddInt("buffer.events_per_thread", &o.buffer.events_per_thread, 1, int64_t{1} << 32,
           "Scopes kept per thread (32 bytes each, allocated as needed); more are counted as "
           "dropped and shown in the report.");
}

Status ValidateOptions(const Options& o) {
  Options copy = o;
  base::ConfigSchema schema;
  AddOptionsKeys(schema, copy);
  TRAINPROF_RETURN_IF_ERROR(schema.Validate());
  if (o.output.run_dir.empty()) {
    if (o.output.name.empty() || o.output.name.find('/') != std::string::npos) {
      return InvalidArgument("output.name must be a non-empty folder name without '/', got '" +
                             o.output.name + "'");
    }
    if (o.output.dir.empty()) return InvalidArgument("output.dir must not be empty");
  }
  if (o.memory.group_by_input_shape && !o.memory.record_shapes) {
    return InvalidArgument(
        "memory.group_by_input_shape needs memory.record_shapes: true (shapes are only known "
        "when they are recorded)");
  }
  return o.schedule.Validate();
}

Status ApplyOptionsConfig(Options& o, const std::string& config_path,
                          const std::vector<std::string>& overrides) {
  base::ConfigSchema schema;
  AddOptionsKeys(schema, o);
  if (!config_path.empty()) TRAINPROF_RETURN_IF_ERROR(schema.ApplyFile(config_path));
  for (const std::string& s : overrides) TRAINPROF_RETURN_IF_ERROR(schema.ApplyOverride(s));
  return ValidateOptions(o);
}

StatusOr<Options> LoadOptionsFile(const std::string& path) {
  Options o;
  TRAINPROF_RETURN_IF_ERROR(ApplyOptionsConfig(o, path, {}));
  return o;
}

}  // namespace trainprof
