"""The search over one kernel's schedules, and the loop that runs many searches on a process
pool with a progress bar.

Per kernel, within its trial budget: the default's variants first (the schedules lower_vdla
measures without a record, and their one-thread twins; the first one's output is the
reference), then half of the rest in the cost model's order (KnobSpace.model_order), then
evolutionary steps: a neighbour of one of the four fastest verified schedules, or now and
then a random fitting schedule. A schedule counts only if its output equals the reference bit
for bit; the record is the fastest of those, the default on a tie, so it is never worse than
the default. Past the budget, the one-thread twin of the fastest is measured if it was not:
two virtual threads can lose to the same tiles on one (22,778 against 22,385 cycles), and the
record must not lose to a variant of itself. Searches of different kernels run side by side,
so the pool stays busy while one kernel waits for its measurements; a few at a time, so they
finish one by one and a run stopped midway keeps the records of those done."""
from __future__ import annotations

import json
import multiprocessing
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from ..vdla.lower import default_choices, default_variants, one_thread
from .errors import TuningError
from .measure import Measurement, Trial, measure
from .records import TuningRecord
from .signature import tuning_hash
from .space import KnobSpace

_PARENTS = 4            # evolutionary steps start from one of this many fastest schedules
_RANDOM_SHARE = 0.2     # the share of evolutionary steps that jump to a random schedule


class KernelSearch:
    """Ask for a schedule to measure, tell its measurement, read the record at the end."""

    def __init__(self, index: int, config, spec, sig: dict, name: str, budget: int, vta_compat: bool = False,
                 seed: int = 0):
        self.index, self.config, self.spec, self.sig, self.name = index, config, spec, sig, name
        self.vta_compat = vta_compat
        try:
            choices = default_choices(config, spec, vta_compat)
        except ValueError as exc:
            raise TuningError(f"{name}: {exc}") from None
        self.space = KnobSpace(config, spec, name, choices[0])
        self.defaults = default_variants(choices)
        self.budget = max(budget, len(self.defaults))
        self.model_share = len(self.defaults) + (self.budget - len(self.defaults)) // 2
        self.rng = np.random.default_rng([seed, index])
        self.data_seed = int(np.random.default_rng([seed, index, 1]).integers(1 << 31))
        self._config_doc = json.dumps(config.to_dict(), sort_keys=True)
        self._ranked = deque(self.space.model_order())
        self.asked: list = []
        self._asked: set = set()
        self.measured: dict = {}
        self.bar_settled = False        # its unused budget is off the progress bar's total

    # ---- ask / tell -----------------------------------------------------------------------
    def ask(self):
        """The next schedule to measure, or None when the budget or the space is used up (and
        the fastest one's one-thread twin is measured)."""
        k = self._untried_twin() if len(self.asked) >= self.budget else self._propose()
        if k is not None:
            self.asked.append(k)
            self._asked.add(self.space.canonical(k))
        return k

    def trial(self, knobs) -> Trial:
        return Trial(self.index, self._config_doc, self.spec, knobs, self.vta_compat, self.data_seed)

    def tell(self, knobs, m: Measurement) -> None:
        self.measured[knobs] = m

    def _propose(self):
        for d in self.defaults:
            if d not in self.asked:
                return d
        if len(self.asked) < self.model_share:
            k = self._next_ranked()
            if k is not None:
                return k
        parents = self._fastest()[:_PARENTS]
        if parents and self.rng.random() >= _RANDOM_SHARE:
            for _ in range(8):
                # the smaller of two draws: the faster parents are chosen more often
                i = min(int(self.rng.integers(len(parents))), int(self.rng.integers(len(parents))))
                k = self.space.neighbour(parents[i], self.rng)
                if k is not None and self.space.canonical(k) not in self._asked:
                    return k
        for _ in range(8):
            k = self.space.random(self.rng)
            if self.space.canonical(k) not in self._asked:
                return k
        return self._next_ranked()

    def _untried_twin(self):
        """The same tiles on one virtual thread as the fastest schedule so far, if it has
        several and that twin was not asked for."""
        fastest = self._fastest()
        if not fastest or fastest[0].vthreads <= 1:
            return None
        twin = one_thread(fastest[0])
        return None if self.space.canonical(twin) in self._asked else twin

    def _next_ranked(self):
        while self._ranked:
            k = self._ranked.popleft()
            if self.space.canonical(k) not in self._asked:
                return k
        return None

    # ---- results --------------------------------------------------------------------------
    def _reference(self) -> Measurement | None:
        return self.measured.get(self.defaults[0])

    def _verified(self, m: Measurement) -> bool:
        ref = self._reference()
        if m.error is not None:
            return False
        return ref is None or (ref.error is None and m.digest == ref.digest)

    def _fastest(self) -> list:
        """Verified schedules, fastest first (ties: the earlier measured, so a default wins)."""
        order = {k: i for i, k in enumerate(self.asked)}
        done = [k for k, m in self.measured.items() if self._verified(m)]
        return sorted(done, key=lambda k: (self.measured[k].cycles, order[k]))

    @property
    def failed(self) -> list[tuple]:
        """(knobs, error) of the schedules that did not compile or run."""
        return [(k, m.error) for k, m in self.measured.items() if m.error is not None]

    @property
    def mismatched(self) -> list:
        """Schedules whose output differs from the default's: a compiler bug, never recorded."""
        ref = self._reference()
        if ref is None or ref.error is not None:
            return []
        return [k for k, m in self.measured.items() if m.error is None and m.digest != ref.digest]

    def record(self) -> TuningRecord:
        ref = self._reference()
        if ref is None:
            raise TuningError(f"{self.name}: the default schedule was never measured")
        if ref.error is not None:
            raise TuningError(f"{self.name}: the default schedule {self.defaults[0]} fails on the simulator: "
                              f"{ref.error}")
        valid = [d for d in self.defaults if d in self.measured and self._verified(self.measured[d])]
        default = min(valid, key=lambda d: self.measured[d].cycles)       # the first on a tie, like lower_vdla
        best = self._fastest()[0]
        if self.measured[best].cycles == self.measured[default].cycles:
            best = default
        return TuningRecord(self.sig["op"], self.sig["layer"], tuple(self.sig["epilogue"]), self.vta_compat,
                            tuning_hash(self.config), self.config.name, best, self.measured[best].cycles,
                            default, self.measured[default].cycles, len(self.measured))


def run_searches(searches: list[KernelSearch], jobs: int = 1, progress: bool | None = None,
                 done=None, journal=None) -> None:
    """Measure what the searches ask for until each is done: in this process for jobs=1
    (one search after the other: a search's next schedule depends on its own measurements
    only, so the order of searches changes no record), else on `jobs` worker processes
    (spawned: the parent may hold threads a fork would copy mid-lock), keeping two trials per
    worker in flight from about as many searches at once (a trial each, as when all ran side
    by side), so searches finish one by one, not all at the end. `done(search)` is called as
    each search finishes (its record can be saved: an interrupted run keeps it). `journal` (a
    journal.TrialJournal): measurements it holds are told without measuring, new ones are added
    to it as they come. progress: a bar on stderr (None: where stderr is a terminal)."""
    from tqdm import tqdm
    bar = tqdm(total=sum(s.budget for s in searches), desc="tuning", unit="trial",
               disable=None if progress is None else not progress, dynamic_ncols=True)
    done = done or (lambda s: None)
    try:
        if jobs <= 1:
            _run_inline(searches, bar, done, journal)
        else:
            _run_pool(searches, jobs, bar, done, journal)
    finally:
        bar.close()


def _finished(bar, search: KernelSearch) -> None:
    """A search that stops short of its budget (its space is used up) shrinks the bar's total
    (once: a search may be asked again, _run_pool)."""
    if not search.bar_settled:
        search.bar_settled = True
        bar.total -= max(0, search.budget - len(search.asked))
        bar.refresh()


def _counted(bar, search: KernelSearch) -> None:
    """A trial past the budget (the fastest schedule's twin) grows the bar's total."""
    if len(search.asked) > search.budget:
        bar.total += 1
        bar.refresh()


def _run_inline(searches, bar, done, journal) -> None:
    for s in searches:
        while (k := s.ask()) is not None:
            _counted(bar, s)
            m = journal.get(s, k) if journal is not None else None
            if m is None:
                m = measure(s.trial(k))
                if journal is not None:
                    journal.add(s, k, m)
            s.tell(k, m)
            bar.update()
        _finished(bar, s)
        done(s)


def _run_pool(searches, jobs: int, bar, done, journal) -> None:
    waiting = deque(searches)
    active = deque()                # round robin over the started searches that may ask more
    started: set = set()            # taken from `waiting`, not done yet
    in_flight: dict = {}            # search -> its trials being measured
    futures = {}

    def finish(s):
        started.discard(s)
        in_flight.pop(s, None)
        done(s)

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        def fill():
            while len(futures) < 2 * jobs and (active or waiting):
                if waiting and (not active or len(started) < 2 * jobs):
                    started.add(waiting[0])
                    active.append(waiting.popleft())
                s = active.popleft()
                k = s.ask()
                if k is None:
                    _finished(bar, s)
                    if not in_flight.get(s):
                        finish(s)
                    continue
                _counted(bar, s)
                known = journal.get(s, k) if journal is not None else None
                if known is not None:          # measured by an earlier, interrupted run
                    s.tell(k, known)
                    bar.update()
                    active.append(s)
                    continue
                futures[pool.submit(measure, s.trial(k))] = (s, k)
                in_flight[s] = in_flight.get(s, 0) + 1
                active.append(s)
        fill()
        while futures:
            finished, _ = wait(futures, return_when=FIRST_COMPLETED)
            for f in finished:
                s, k = futures.pop(f)
                try:
                    m = f.result()
                    s.tell(k, m)
                    if journal is not None:
                        journal.add(s, k, m)
                except BrokenProcessPool:
                    raise TuningError(f"a measuring worker process died while measuring {s.name} with {k} "
                                      "(out of memory?); try fewer --jobs") from None
                bar.update()
                in_flight[s] -= 1
                if not in_flight[s] and s not in active:
                    # it asked for nothing more and has it all, but what came last may be the
                    # fastest, whose twin it then asks for
                    if s._untried_twin() is None:
                        finish(s)
                    else:
                        active.append(s)
            fill()
