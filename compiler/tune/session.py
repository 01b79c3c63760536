"""What a tuning run does before it searches, the same for accelerator (tune_model) and CPU
(cpu_tune_model) kernels: check its budget, open its log, and reuse the records the log
already holds instead of searching those kernels again."""
from __future__ import annotations

import os
from typing import Callable, Sequence, TypeVar

from .errors import TuningError, TuningOptionError
from .records import TuningLog, load_tuning

K = TypeVar("K")


def check_budget(trials: int, jobs: int | None, job_does: str) -> int:
    """The number of processes (`jobs`; None: every core). `job_does` says what a process does,
    for the message refusing none."""
    if trials < 1:
        raise TuningOptionError(f"--trials {trials}: each kernel needs at least one trial (its default schedule)")
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise TuningOptionError(f"--jobs {jobs}: at least one process {job_does}")
    return jobs


def open_log(output) -> TuningLog:
    """The log at `output` to add to, or a new one (no output, or none there yet)."""
    return load_tuning(output) if output is not None and os.path.exists(output) else TuningLog()


def split_reused(kernels: Sequence[K], lookup: Callable[[K], object], retune: bool) -> tuple[dict, list[int]]:
    """-> ({index: the log's record} of the kernels it has, unless `retune`; the indices of the
    kernels to search)."""
    reused, todo = {}, []
    for i, k in enumerate(kernels):
        old = None if retune else lookup(k)
        if old is None:
            todo.append(i)
        else:
            reused[i] = old
    return reused, todo
