"""Timed blocks: ``trainprof.scope``, ``@trainprof.profiled`` and ``trainprof.timed_iter``.

A block is recorded on the thread that runs it, nested under the blocks open on that thread,
and only in the steps the session's schedule records (elsewhere it costs one branch).
"""

from __future__ import annotations

import enum
import functools
import inspect
from typing import Any, Callable, Iterable, Iterator, Optional, TypeVar, Union, overload

from trainprof import _core

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class Kind(enum.IntEnum):
    """What an action is. The time report's concise set (``time.verbose: false``) and the
    speed report use it to find the loops, the data loader, forward, backward and optimizer."""

    OTHER = 0
    LOOP = 1  # run_training_epoch, run_training_batch, run_validation
    DATALOADER = 2  # [_TrainingEpochLoop].train_dataloader_next, [_EvaluationLoop].val_next
    FORWARD = 3
    BACKWARD = 4
    OPTIMIZER = 5
    STEP = 6  # training_step, validation_step
    COMMUNICATION = 7  # collectives of data-parallel training


KindLike = Union[Kind, int, str, None]

#: ``with trainprof.scope(name, kind="other"):`` records one timed block of the action
#: ``name``. ``kind`` is a :class:`Kind` or its name in lower case ("loop", "dataloader",
#: "forward", "backward", "optimizer", "step", "communication"). An exception inside the block
#: ends the block and propagates. A scope object serves one ``with`` at a time; enter and exit it
#: on the same thread. Raises ValueError for an unknown kind, TypeError for a name that is not a
#: str. (This is the C type ``trainprof._core.Scope``: entering and leaving costs well under a
#: microsecond.)
scope = _core.Scope


@overload
def profiled(name: F) -> F: ...


@overload
def profiled(name: Optional[str] = None, kind: KindLike = "other") -> Callable[[F], F]: ...


def profiled(name: Any = None, kind: KindLike = "other") -> Any:
    """Decorator: every call of the function (or method, or coroutine function) is one timed
    block of the action ``name`` (default: the function's qualified name).

        @trainprof.profiled("[Model].forward", kind="forward")
        def forward(self, x): ...

        @trainprof.profiled            # action "load_batch"
        def load_batch(i): ...
    """
    if callable(name):
        return profiled()(name)
    if name is not None and not isinstance(name, str):
        raise TypeError("trainprof.profiled(name): the action name must be a str")
    kind_value = _check_kind(kind)

    def decorate(fn: F) -> F:
        action = name if name is not None else fn.__qualname__
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with scope(action, kind_value):
                    return await fn(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with scope(action, kind_value):
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate


class _TimedIterable(Iterable[T]):
    """What timed_iter() returns: iterating it iterates the wrapped object, timing each next()."""

    def __init__(self, iterable: Iterable[T], action: str, kind: int) -> None:
        self._iterable = iterable
        self._action = action
        self._kind = kind

    def __iter__(self) -> Iterator[T]:
        return _core.TimedIterator(self._iterable, self._action, self._kind)

    def __len__(self) -> int:
        return len(self._iterable)  # type: ignore[arg-type]

    def __getattr__(self, attr: str) -> Any:  # batch_size, dataset, ... of a DataLoader
        return getattr(self._iterable, attr)


def timed_iter(
    iterable: Iterable[T],
    action: str = "[_TrainingEpochLoop].train_dataloader_next",
    kind: KindLike = "dataloader",
) -> Iterable[T]:
    """Wraps a data loader (any iterable) so that every ``next()`` that yields a batch is one
    call of ``action``, Lightning's name for fetching a training batch by default. The speed
    report's data-loader throughput and data-wait figures come from these calls. Use
    ``action="[_EvaluationLoop].val_next"`` for validation. ``len()`` and attributes pass
    through, and the result can be iterated once per epoch, like the loader itself.
    """
    if not isinstance(action, str):
        raise TypeError("trainprof.timed_iter(action=...): the action name must be a str")
    return _TimedIterable(iterable, action, _check_kind(kind))


def _check_kind(kind: KindLike) -> int:
    if kind is None:
        return 0
    if isinstance(kind, str):
        if kind not in _core.KINDS:
            names = ", ".join(_core.KINDS)
            raise ValueError(f"trainprof: kind must be one of {names}, got {kind!r}")
        return int(_core.KINDS[kind])
    return int(Kind(kind))
