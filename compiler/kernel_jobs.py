"""A CPU kernel to build from tensor expressions that pickle, so that a worker process
(process_pool) can build it: compile_model builds a graph's kernels this way (jobs > 1: side by
side), and the CPU tuner its candidates."""
from __future__ import annotations

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
