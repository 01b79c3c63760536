"""A function over a list of items, in order: in this process for jobs=1, else on `jobs`
spawned worker processes (a context manager: the processes end with it). Spawned, not forked:
the parent may hold threads (a thread pool, onnxruntime's) that a fork would copy mid-lock.
The function and the items must pickle; the results come back in the items' order, each as
soon as it and those before it are done."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from vdla.hw.errors import CompileError


class WorkerDied(CompileError, RuntimeError):
    """A worker process ended mid-task (killed: out of memory, most likely)."""


class SpawnedPool:
    """`progress`: a bar per map on stderr (tqdm): True, False, or None where stderr is a
    terminal."""

    def __init__(self, jobs: int = 1, progress: bool | None = False):
        if jobs < 1:
            raise ValueError(f"jobs={jobs}: at least one process does the work")
        self.jobs, self.progress = jobs, progress
        self._pool = None

    def __enter__(self):
        if self.jobs > 1:
            self._pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"))
        return self

    def __exit__(self, *exc):
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def map(self, fn, items: list, desc: str = "", unit: str = "it"):
        """fn(item) for each item, in order (an iterator); WorkerDied if a worker process dies.
        `desc` and `unit` label the progress bar ("CPU kernels", "kernel")."""
        results = (fn(item) for item in items) if self._pool is None else self._pool.map(fn, items)
        return self._counted(results, len(items), desc, unit)

    def _counted(self, results, total: int, desc: str, unit: str):
        bar = None
        if self.progress is not False and total:
            from tqdm import tqdm
            bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True,
                       disable=None if self.progress is None else False)
        try:
            for result in results:
                if bar is not None:
                    bar.update()
                yield result
        except BrokenProcessPool:
            raise WorkerDied(f"a worker process died (out of memory?): try fewer than {self.jobs} jobs") from None
        finally:
            if bar is not None:
                bar.close()
