"""Lowering GPU schedules: a schedule with loops bound to blockIdx/threadIdx -> kernels.

The pipeline, in order (each step a named function):
1. lower_schedule: the loop nest (shared stages relaxed over the block's threads and marked);
2. split_kernels: one kernel per root stage, each in launch form (kernels.py) -- before the
   simplifier drops one-iteration loops, so a stage of one element keeps its (1 x 1) launch;
3. per kernel, simplify, lower_virtual_threads, unroll_loops, simplify: as for CPUs;
4. cooperative_fetch: shared buffers filled by all threads of a block, with barriers (fetch.py);
5. check_kernel: device limits, barrier uniformity, racing stores (checks.py).
The kernels stay multi-dimensional; codegen (compiler/codegen/nvptx) flattens them, and
compiler/codegen/nvptx/emulate.py runs them on the CPU.
"""
from __future__ import annotations

from ...tir import passes as T
from ...tir.verify import verify
from ..lower import lower_schedule
from .checks import check_kernel
from .fetch import cooperative_fetch
from .function import GpuFunction, GpuKernel
from .kernels import split_kernels

PASSES = [
    ("simplify", T.simplify_func),
    ("lower_virtual_threads", T.lower_virtual_threads),
    ("unroll_loops", T.unroll_loops),
    ("simplify_unrolled", T.simplify_func),
]
KERNEL_PASSES = [
    ("cooperative_fetch", cooperative_fetch),
    ("check_kernel", check_kernel),
]


def lower_gpu(schedule, args, name="kernel", check=False) -> GpuFunction:
    """The kernels of a GPU schedule; `args` are its tensors in order (inputs, then outputs).
    check=True verifies the loop IR after every step."""
    func = lower_schedule(schedule, args, name)
    gf = split_kernels(func)
    if check:   # after the split: a store predicate names a launch index only a kernel defines
        for k in gf.kernels:
            verify(k.func, stage="lower_schedule")
    gf.num_outputs = len(schedule.outputs)
    steps = [(pass_name, lambda k, fn=fn: k.with_func(fn(k.func))) for pass_name, fn in PASSES] + KERNEL_PASSES
    for pass_name, fn in steps:
        gf = gf.map_kernels(fn)
        if check:
            for k in gf.kernels:
                verify(k.func, stage=pass_name)
    return gf


__all__ = ["lower_gpu", "GpuFunction", "GpuKernel", "split_kernels", "cooperative_fetch", "check_kernel"]
