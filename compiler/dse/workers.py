"""Where the work of a sweep runs: this machine's cores, or a Ray cluster. Both map one
function over items with a shared payload and report results as they complete, so the DSE
(and the RTL-vs-simulator campaign in benchmarks/rtl_vs_sim.py) has no scheduler of its own.

    with make_pool(ray_address=None, workers=4) as pool:
        for index, outcome in pool.map(fn, items, common):
            ...   # outcome is fn(items[index], common), or a WorkerFailure

`fn` must be importable by name in the workers (a module-level function of an installed
package): a process pool and Ray both send it by reference. `common` travels once per
worker (process pool) or once per cluster (Ray's object store), not once per item.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass


@dataclass
class WorkerFailure:
    """An item whose function raised, or whose worker died: what happened, in one line."""
    message: str

    def __str__(self) -> str:
        return self.message


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class InlinePool:
    """Runs every item in this process, one after the other (one worker, tests, debugging)."""
    workers = 1
    where = "this process"

    def map(self, fn, items, common=None):
        for index, item in enumerate(items):
            try:
                yield index, fn(item, common)
            except Exception as exc:   # one item's failure is that item's result, not the sweep's end
                yield index, WorkerFailure(_describe(exc))

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_COMMON = None


def _init_worker(common):
    global _COMMON
    _COMMON = common


def _call_with_common(fn, item):
    return fn(item, _COMMON)


class LocalPool(InlinePool):
    """A pool of `workers` processes on this machine (spawned: a fresh interpreter each, so
    no state of the parent leaks in)."""

    def __init__(self, workers: int | None = None):
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self.workers = max(1, workers or cores)
        self.where = f"{self.workers} local process(es)"

    def map(self, fn, items, common=None):
        items = list(items)
        if not items:
            return
        lost = yield from self._run(fn, list(enumerate(items)), common, self.workers)
        # A dead worker breaks the whole pool: every item not yet answered failed with it, the
        # one that killed it among them. Each runs again in a pool of its own, so the item that
        # kills its worker is the one reported, and the others get their own answers.
        for index, item in lost:
            for _ in (yield from self._run(fn, [(index, item)], common, 1)):
                yield index, WorkerFailure("the worker process died (killed, out of memory or crashed) while "
                                           "running this item")

    @staticmethod
    def _run(fn, indexed, common, workers):
        """Yields (index, outcome) as items finish; returns the (index, item) pairs whose worker
        died or that a dead worker's pool took down with it."""
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(min(workers, len(indexed)), mp_context=context, initializer=_init_worker,
                                   initargs=(common,))
        finished, lost = False, []
        try:
            futures = {pool.submit(_call_with_common, fn, item): (k, item) for k, item in indexed}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    k, item = futures[future]
                    try:
                        yield k, future.result()
                    except BrokenProcessPool:
                        lost.append((k, item))
                    except Exception as exc:
                        yield k, WorkerFailure(_describe(exc))
            finished = True
        finally:
            if not finished:   # Ctrl-C or a caller that stopped reading: stop the workers, not wait for them
                _stop(pool)
            pool.shutdown(wait=True, cancel_futures=True)
        return sorted(lost, key=lambda pair: pair[0])


def _stop(pool: ProcessPoolExecutor) -> None:
    """Terminate a process pool's workers now (their Yosys children die with them: see
    vdla.hw.synth.die_with_parent). The executor has no public way to do this."""
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()


SYSTEM_FAILURE_RETRIES = 1


class RayPool(InlinePool):
    """Ray tasks on the cluster at `address` ("local" starts a Ray instance on this machine).
    Every node needs the same vdla installed (pip install 'vdla[ray]')."""

    def __init__(self, address: str):
        try:
            import ray
        except ImportError:
            raise RuntimeError("--ray needs the Ray package: pip install 'vdla[ray]' (or pip install ray)") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False}
            ray.init(address=None if address == "local" else address, **kwargs)
            self._started = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self.where = f"Ray at {address} ({self.workers} CPUs)"

    def map(self, fn, items, common=None):
        ray = self._ray
        items = list(items)
        if not items:
            return
        shared = ray.put(common)
        # A worker that dies (a node lost, a process killed under memory pressure) is retried
        # once; an exception the task raises is its answer and is never retried.
        remote = ray.remote(max_retries=SYSTEM_FAILURE_RETRIES, retry_exceptions=False)(fn)
        refs = {remote.remote(item, shared): k for k, item in enumerate(items)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    try:
                        yield refs[ref], ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                        yield refs[ref], WorkerFailure(_describe(cause))
                    except ray.exceptions.RayError as exc:
                        yield refs[ref], WorkerFailure(f"Ray lost the task: {_describe(exc)}")
        finally:
            for ref in pending:   # stopped early: the cluster should not keep working for nobody
                ray.cancel(ref, force=True)

    def close(self):
        if self._started:   # a cluster the caller connected to stays up; our own local one stops
            self._ray.shutdown()
            self._started = False


def make_pool(ray_address: str | None = None, workers: int | None = None):
    """Ray when an address is given, else `workers` local processes (1: this process)."""
    if ray_address:
        return RayPool(ray_address)
    if workers == 1:
        return InlinePool()
    return LocalPool(workers)
