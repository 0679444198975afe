"""trainprof: why is my training slow, or out of memory, and what do I do about it?

The profiler inside any PyTorch training loop. The recording, the statistics, the reports
(time per action, throughput, system, GPU and energy), the run folder with report.html and
trace.json, and the run history are trainprof's C++ core; this package is its Python surface.

    import trainprof

    with trainprof.Session(name="my-model", overrides={"system.enabled": True}) as session:
        session.batch_size = 64
        for epoch in range(2):
            session.epoch = epoch
            session.stage("train")
            for batch in trainprof.timed_iter(train_loader):
                with trainprof.scope("run_training_batch", kind="loop"):
                    with trainprof.scope("[Model].forward", kind="forward"):
                        loss = model(batch).sum()
                    with trainprof.scope("backward", kind="backward"):
                        loss.backward()
                session.step()
    # the reports are printed; session.report.run_dir holds report.html, report.json, ...

Traces a run already wrote are analysed in-process, as `trainprof analyze` does:

    a = trainprof.analyze("traces/", hta_compat=True)
    a.table("temporal_breakdown")           # a pandas DataFrame

and trainprof.hta.TraceAnalysis answers HTA's TraceAnalysis calls. See docs/python.md for the
whole API and the Lightning profiler (trainprof.lightning).
"""

from trainprof import _core
from trainprof._analysis import Analysis, analyze, analyze_options
from trainprof._core import ConfigError, TraceError, TrainprofError
from trainprof._scope import Kind, profiled, scope, timed_iter
from trainprof._session import Report, Session, active_session

__version__: str = _core.__version__

__all__ = [
    "Analysis",
    "ConfigError",
    "Kind",
    "Report",
    "Session",
    "TraceError",
    "TrainprofError",
    "active_session",
    "analyze",
    "analyze_options",
    "profiled",
    "scope",
    "timed_iter",
    "__version__",
]
