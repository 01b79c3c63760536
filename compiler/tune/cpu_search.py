"""The search over one CPU kernel's schedules, and the loop that runs the searches of a model:
candidates compiled in batches (on worker processes when there are several jobs), then timed
one at a time in this process while no compile runs, with a progress bar. Kernels are
searched one after the other, so a run stopped midway keeps the records of those done.

Per kernel, within its trial budget: the default schedule first (its output is the
reference), then the space's order (cpu_space.py), each candidate timed against the default
(HostTimer.compare: their runs alternating) and counted only if its output equals the
default's (within float rounding). At the end the candidate that beat the default by the
widest margin above MARGIN is timed against it again with more pairs (HostTimer.paired); it
becomes the record only if it beats the default by MARGIN there too, else the next is tried
(FINALISTS in all), else the default is the record. So a record is never slower than the
default beyond the noise of a paired measurement, and the default wins every tie."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..kernel_jobs import CompileJob, compile_job, target_parts
from ..process_pool import SpawnedPool, WorkerDied
from .cpu_measure import same_output
from .cpu_records import CpuTuningRecord
from .cpu_signature import host_hash, host_name
from .cpu_space import CpuKnobSpace
from .errors import TuningError

MARGIN = 0.03       # a candidate must be this much faster than the default (3%)
FINALISTS = 3       # candidates timed again against the default, fastest first


@dataclass
class Candidate:
    knobs: object
    ms: float | None = None         # a candidate's: the default's ms times their ratio in compare
    error: str | None = None        # did not compile or run
    mismatch: bool = False          # ran, but computed another output than the default


@dataclass
class CpuKernelSearch:
    """Ask for knobs to measure, tell what they gave, confirm a finalist, read the record."""
    kernel: object                  # cpu_tune_model.CpuKernel
    space: CpuKnobSpace
    budget: int
    target: object                  # compiler.target.Target the kernels are compiled for
    seed: int = 0
    measured: list = field(default_factory=list)      # Candidates, in the order asked
    reference: list | None = None                      # the default's outputs
    confirmed: tuple | None = None                     # (knobs, ms, default_ms) of the paired timing
    broken: str | None = None                          # why the default schedule failed: no record
    default_run: object = None                         # runs the default's kernel (timed against)

    def __post_init__(self):
        self.budget = max(1, min(self.budget, len(self.space)))
        self.asked = 0

    @property
    def name(self) -> str:
        return self.kernel.name

    def ask(self):
        """The next knobs to measure, or None when the budget or the space is used up."""
        if self.asked >= self.budget or self.broken is not None:
            return None
        self.asked += 1
        return self.space.points[self.asked - 1]

    def tell(self, knobs, ms: float | None, outputs: list | None, error: str | None = None) -> None:
        c = Candidate(knobs, ms, error)
        if knobs == self.space.default:
            self.reference = outputs
            if error is not None:
                self.broken = f"the default schedule {knobs} fails: {error}"
        elif error is None:
            c.mismatch = self.reference is None or not same_output(outputs, self.reference)
        self.measured.append(c)

    @property
    def default(self) -> Candidate:
        found = [c for c in self.measured if c.knobs == self.space.default]
        if not found:
            raise TuningError(f"{self.name}: the default schedule was never measured")
        return found[0]

    def finalists(self) -> list:
        """The verified candidates that beat the default by MARGIN, fastest first."""
        if self.broken is not None:
            return []
        bar = self.default.ms / (1 + MARGIN)
        ok = [c for c in self.measured if c.knobs != self.space.default and c.error is None and not c.mismatch
              and c.ms < bar]
        return [c.knobs for c in sorted(ok, key=lambda c: c.ms)][:FINALISTS]

    def confirm(self, knobs, ms: float, default_ms: float) -> bool:
        """A finalist's paired timing against the default; True if it becomes the record."""
        if ms * (1 + MARGIN) <= default_ms and (self.confirmed is None or ms / default_ms <
                                                 self.confirmed[1] / self.confirmed[2]):
            self.confirmed = (knobs, ms, default_ms)
            return True
        return False

    @property
    def failed(self) -> list:
        return [(c.knobs, c.error) for c in self.measured if c.error is not None]

    @property
    def mismatched(self) -> list:
        return [c.knobs for c in self.measured if c.mismatch]

    def record(self) -> CpuTuningRecord | None:
        """The best schedule confirmed, else the default; None if the default failed."""
        if self.broken is not None:
            return None
        d = self.default
        knobs, ms, default_ms = self.confirmed or (d.knobs, d.ms, d.ms)
        return CpuTuningRecord(self.kernel.signature["kernel"], self.kernel.signature, host_hash(self.target),
                               host_name(self.target), self.target.threads, knobs, round(ms, 6), d.knobs,
                               round(default_ms, 6), len(self.measured))


class Compiler(SpawnedPool):
    """Compiles batches of candidates: in this process for jobs=1, else on `jobs` spawned
    processes."""

    def compile(self, jobs: list[CompileJob]) -> list:
        try:
            return list(self.map(compile_job, jobs))
        except WorkerDied:
            raise TuningError("a compiling worker process died (out of memory?); try fewer --jobs") from None


def run_cpu_searches(searches: list[CpuKernelSearch], timer, jobs: int = 1, progress: bool | None = None,
                     batch: int | None = None, done=None) -> None:
    """Measure what the searches ask for, one search after the other (what a search asks does
    not depend on what it measured, so the order changes no record), and confirm each one's
    finalists as soon as its candidates are measured; `done(search)` is then called (its
    record can be saved: an interrupted run keeps it). `timer`: a cpu_measure.HostTimer (or
    anything with its time and paired methods)."""
    from tqdm import tqdm
    batch = batch or 2 * max(jobs, 1)
    done = done or (lambda s: None)
    bar = tqdm(total=sum(s.budget for s in searches), desc="tuning", unit="trial",
               disable=None if progress is None else not progress, dynamic_ncols=True)
    try:
        with Compiler(jobs) as compiler:
            _measure_all(searches, timer, compiler, batch, bar, done)
    finally:
        bar.close()


def _measure_all(searches, timer, compiler, batch, bar, done) -> None:
    waiting = deque(searches)       # each asks its default first
    while waiting:
        asked, ended = [], []
        while waiting and len(asked) < batch:
            k = waiting[0].ask()
            if k is None:
                ended.append(waiting.popleft())     # confirmed once its last candidates are measured
                continue
            asked.append((waiting[0], k))
        built = compiler.compile([_job(s, k) for s, k in asked]) if asked else []
        for (s, k), kernel in zip(asked, built):
            _measure(s, k, kernel, timer)
            bar.update()
        while waiting and (waiting[0].asked >= waiting[0].budget or waiting[0].broken is not None):
            ended.append(waiting.popleft())         # nothing left to ask: done now, not after the next batch
        for s in ended:
            _finished(bar, s)
            _confirm(s, timer, compiler)
            done(s)


def _finished(bar, s: CpuKernelSearch) -> None:
    """A search that stops short of its budget (a failed default) shrinks the bar's total."""
    bar.total -= s.budget - s.asked
    bar.refresh()


def _job(s: CpuKernelSearch, knobs) -> CompileJob:
    return CompileJob(s.kernel.tensors, s.kernel.outputs, knobs, target_parts(s.target), "tune")


def _runner(s: CpuKernelSearch, kernel):
    lib = kernel.load()
    arrays = s.kernel.probe(s.seed)
    return (lambda: lib.run(kernel.name, arrays)), arrays


def _measure(s: CpuKernelSearch, knobs, kernel, timer) -> None:
    if s.broken is not None:        # asked in the default's batch: nothing to compare with
        s.tell(knobs, None, None, "not measured: the default schedule failed")
        return
    if isinstance(kernel, str):
        s.tell(knobs, None, None, kernel)
        return
    default = knobs == s.space.default
    try:
        run, arrays = _runner(s, kernel)
        run()
        outputs = [np.copy(a) for a in arrays[len(arrays) - len(s.kernel.outputs):]]
        if default:
            ms = timer.time(knobs, run)
        else:
            a, b = timer.compare(s.space.default, s.default_run, knobs, run)
            ms = s.default.ms * b / a
    except Exception as exc:  # noqa: BLE001 -- a kernel that does not load or run is one failed candidate
        s.tell(knobs, None, None, f"{type(exc).__name__}: {exc}")
        return
    if default:
        s.default_run = run
    s.tell(knobs, ms, outputs)


def _confirm(s: CpuKernelSearch, timer, compiler) -> None:
    finalists = s.finalists()
    for knobs, kernel in zip(finalists, compiler.compile([_job(s, k) for k in finalists]) if finalists else []):
        run, _ = _runner(s, kernel)
        default_ms, ms = timer.paired(s.space.default, s.default_run, knobs, run)
        s.confirm(knobs, ms, default_ms)
    s.default_run = None            # the kernel's library can go
