"""Building CPU kernels from tensor expressions that pickle, in this process or on spawned
worker processes: compile_model builds a graph's kernels this way (jobs > 1: side by side),
and the CPU tuner its candidates. Spawned, not forked: the parent may hold threads (a thread
pool, onnxruntime's) that a fork would copy mid-lock."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass


@dataclass(frozen=True)
class CompileJob:
    tensors: list           # the kernel's arguments (tensor expressions), inputs then outputs
    outputs: list
    knobs: object           # a tuning record's schedule knobs, or None for the default schedule
    target: tuple           # (triple, cpu, features, threads): a compiler.target.Target's parts
    name: str


def compile_job(job: CompileJob):
    """The CompiledKernel of `job`, or why it did not compile (a string, as
    lower_ops.build_or_reason says it): a kernel that fails is a result, not an error."""
    from .build import build
    from .lower_ops import build_or_reason, schedule
    from .target import Target

    def build_kernel():
        target = Target(*job.target)
        return build(schedule(job.outputs, target, job.knobs), job.tensors, target, job.name)
    kernel, why = build_or_reason(build_kernel)
    return kernel if why is None else why


def target_parts(target) -> tuple:
    return target.triple, target.cpu, target.features, target.threads


class KernelPool:
    """Runs compile_job over batches of jobs: in this process for jobs=1, else on `jobs`
    spawned processes (a context manager: the processes end with it)."""

    def __init__(self, jobs: int = 1):
        if jobs < 1:
            raise ValueError(f"jobs={jobs}: at least one process compiles")
        self.jobs = jobs
        self._pool = None

    def __enter__(self):
        if self.jobs > 1:
            self._pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"))
        return self

    def __exit__(self, *exc):
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def results(self, jobs: list[CompileJob]):
        """compile_job(job) for each job, in order, each as soon as it and those before it are
        built. Raises BrokenProcessPool if a worker dies (out of memory)."""
        if self._pool is None:
            return (compile_job(j) for j in jobs)
        return self._pool.map(compile_job, jobs)
