"""check_kernel: what a kernel in launch form must satisfy to run correctly on the device.

Each failure is a ScheduleError naming the kernel, the buffer or loop, the device limit
(vdla.driver.gpu_limits) and what to change: a launch the driver would refuse, shared or local memory over
the budget, a barrier some threads of a block would not reach (the block would hang), a store
every thread of a block would make to the same element (a race), a global buffer allocated
inside a kernel (device code cannot allocate it).
"""
from __future__ import annotations

from vdla.driver import gpu_limits as limits

from ...tir import dtype as dt
from ...tir import expr as E
from ...tir import gpu as G
from ...tir import stmt as S
from ...tir.functor import free_vars
from ..schedule import ScheduleError
from .function import GpuKernel


def check_kernel(kernel: GpuKernel) -> GpuKernel:
    _check_launch(kernel)
    _check_memory(kernel)
    _check_barriers(kernel)
    _check_stores(kernel)
    return kernel


def _check_launch(kernel):
    for tag, ext in kernel.launch.items():
        if ext > limits.tag_limit(tag):
            raise ScheduleError(f"kernel {kernel.name}: {tag} has extent {ext}, over the device limit "
                                f"{limits.tag_limit(tag)}; split the bound axis and bind a smaller part")
    n = kernel.threads_per_block
    if n > limits.MAX_THREADS_PER_BLOCK:
        dims = " x ".join(f"{t}={e}" for t, e in kernel.launch.items() if G.is_thread_tag(t))
        raise ScheduleError(f"kernel {kernel.name}: a block of {dims} is {n} threads, over the device limit "
                            f"of {limits.MAX_THREADS_PER_BLOCK}; bind smaller parts to threadIdx.*")


def _nbytes(buf):
    return buf.size() * dt.itemsize(buf.dtype)


def _check_memory(kernel):
    globals_inside = kernel.allocations("global")
    if globals_inside:
        b = globals_inside[0]
        raise ScheduleError(f"kernel {kernel.name}: buffer {b.name} ({b.dtype}{list(b.shape)}) is global memory "
                            "allocated inside the kernel, which device code cannot do; give its stage scope "
                            "'shared' or 'local', or compute it at the root (its own kernel)")
    shared = kernel.allocations("shared")
    total = sum(_nbytes(b) for b in shared)
    if total > limits.MAX_SHARED_BYTES_PER_BLOCK:
        parts = ", ".join(f"{b.name} {list(b.shape)} {b.dtype} = {_nbytes(b)} B" for b in shared)
        raise ScheduleError(f"kernel {kernel.name}: the block's shared buffers need {total} bytes ({parts}), over "
                            f"the {limits.MAX_SHARED_BYTES_PER_BLOCK} bytes a block may have; attach them at an "
                            "inner loop or use smaller tiles")
    local = kernel.allocations("local")
    total = sum(_nbytes(b) for b in local)
    if total > limits.MAX_LOCAL_BYTES_PER_THREAD:
        parts = ", ".join(f"{b.name} {list(b.shape)} = {_nbytes(b)} B" for b in local)
        raise ScheduleError(f"kernel {kernel.name}: each thread's local buffers need {total} bytes ({parts}), over "
                            f"the {limits.MAX_LOCAL_BYTES_PER_THREAD} bytes of local memory a thread may have")


def _thread_vars(kernel):
    vars_, s = set(), kernel.func.body
    while G.thread_tag(s) is not None:
        if G.is_thread_tag(G.thread_tag(s)):
            vars_.add(s.var)
        s = s.body
    return vars_


def _check_barriers(kernel):
    """Every thread of a block must reach each barrier the same number of times."""
    tvars = _thread_vars(kernel)

    def rec(s, under):
        if s is None:
            return
        if G.is_barrier(s) and under is not None:
            raise ScheduleError(f"kernel {kernel.name}: a barrier is inside {under}, which depends on the "
                                "thread index, so some threads of a block would wait at it forever; attach the "
                                "shared stage outside that loop or condition")
        if isinstance(s, S.For):
            if G.thread_tag(s) is None and (free_vars(s.min) | free_vars(s.extent)) & tvars:
                under = under or f"loop {s.var.name} (range [{s.min!r}, {s.min!r} + {s.extent!r}))"
            rec(s.body, under)
        elif isinstance(s, S.IfThenElse):
            if free_vars(s.cond) & tvars:
                under = under or f"the condition {s.cond!r}"
            rec(s.then_case, under)
            rec(s.else_case, under)
        elif isinstance(s, S.SeqStmt):
            for c in s.seq:
                rec(c, under)
        elif isinstance(s, (S.Allocate, S.AttrStmt)):
            rec(s.body, under)
    rec(kernel.func.body, None)


def _check_stores(kernel):
    """A store to global memory must depend on every launch index with more than one value, or
    be made only where that index is 0 (a cross-thread reduction's result, which every thread
    holds, stored by the first): otherwise the blocks or threads along that index all write the
    same element."""
    launch_vars = []
    s = kernel.func.body
    while G.thread_tag(s) is not None:
        if s.extent.value > 1:
            launch_vars.append((s.var, G.thread_tag(s), s.extent.value))
        s = s.body

    def check(n, pinned):
        used = set(pinned)
        for i in n.indices:
            used |= free_vars(i)
        for var, tag, ext in launch_vars:
            if var not in used:
                raise ScheduleError(
                    f"kernel {kernel.name}: the store to {n.buffer.name}[{', '.join(repr(i) for i in n.indices)}] "
                    f"does not depend on {tag} (extent {ext}), so all {ext} "
                    f"{'blocks' if G.is_block_tag(tag) else 'threads of a block'} along it would write the same "
                    f"element; bind a loop of stage {n.buffer.name} to {tag} or compute that stage at a loop "
                    f"inside the one bound to {tag}")

    def rec(s, pinned):
        if s is None:
            return
        if isinstance(s, S.BufferStore):
            if s.buffer.scope == "global":
                check(s, pinned)
        elif isinstance(s, S.IfThenElse):
            rec(s.then_case, pinned | _pinned_to_zero(s.cond))
            rec(s.else_case, pinned)
        elif isinstance(s, S.SeqStmt):
            for c in s.seq:
                rec(c, pinned)
        elif isinstance(s, (S.For, S.Allocate, S.AttrStmt)):
            rec(s.body, pinned)
    rec(kernel.func.body, frozenset())


def _pinned_to_zero(cond):
    """The variables a condition requires to be 0 (v == 0 among its conjuncts)."""
    if isinstance(cond, E.And):
        return _pinned_to_zero(cond.a) | _pinned_to_zero(cond.b)
    if isinstance(cond, E.EQ):
        for v, c in ((cond.a, cond.b), (cond.b, cond.a)):
            if isinstance(v, E.Var) and E.is_const(c, 0):
                return frozenset({v})
    return frozenset()
