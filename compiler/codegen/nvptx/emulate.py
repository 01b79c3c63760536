"""The CPU emulation of GPU kernels: the correctness oracle of GPU schedules where no GPU is.

A GpuFunction becomes one CPU PrimFunc, compiled by the ordinary CPU pipeline:
- its temporaries are heap buffers around the kernels, which run in order;
- a kernel's blocks are serial loops; its shared buffers are allocated once per block;
- its threads are serial loops, cut at every barrier: `for t: A; sync; B` runs as
  `for t: A` then `for t: B` (A of every thread before B of any, which is what the barrier
  guarantees). A loop or condition around a barrier is the same for all threads (check_kernel
  makes sure), so it moves outside the thread loops; a thread's local buffer that lives across a
  barrier gets one copy per thread.
Math functions are the CPU's (math.py's GPU formulas are checked against numpy on their own). A
kernel that reads shared data before the barrier that orders it reads it before
the threads after it wrote it, here as on a GPU; `thread_order="reverse"` runs the threads of a
block last to first, so a result that depends on their order differs between the two orders.
"""
from __future__ import annotations

import math

import numpy as np

from ...tir import expr as E
from ...tir import gpu as G
from ...tir import stmt as S
from ...tir.functor import substitute, transform
from ...schedule.gpu import GpuFunction, lower_gpu

ORDERS = ("forward", "reverse")


def emulation_func(gf: GpuFunction, thread_order="forward") -> S.PrimFunc:
    """The CPU PrimFunc that runs gf's kernels (params: gf.params)."""
    if thread_order not in ORDERS:
        raise ValueError(f"thread_order must be one of {ORDERS}, got {thread_order!r}")
    body = S.seq(*[_emulate_kernel(k, thread_order) for k in gf.kernels])
    for buf in reversed(gf.temporaries):
        body = S.Allocate(buf, body)
    return S.PrimFunc(gf.name, gf.params, body)


def _emulate_kernel(kernel, order):
    launch = []
    s = kernel.func.body
    while G.thread_tag(s) is not None:
        launch.append((s.var, s.extent.value, G.thread_tag(s)))
        s = s.body
    blocks = [(v, n) for v, n, t in launch if G.is_block_tag(t)]
    threads = [(v, n) for v, n, t in launch if G.is_thread_tag(t)]
    shared = []
    body = _hoist_shared(s, shared)
    body = _Serializer(threads, order).run(body)
    for buf in reversed(shared):
        body = S.Allocate(buf, body)
    for var, n in reversed(blocks):
        body = S.For(var, 0, n, S.ForKind.SERIAL, body)
    return body


def _hoist_shared(body, found):
    """Shared buffers out of the thread code (to the block level), renamed to the CPU's
    global scope."""
    mapping = {}

    def post(n):
        if isinstance(n, S.Allocate) and n.buffer.scope == "shared":
            new = S.Buffer(n.buffer.name, n.buffer.shape, n.buffer.dtype, "global")
            mapping[n.buffer] = new
            found.append(new)
            return n.body
        return None
    body = transform(body, post)
    return _rebuffer(body, mapping, None)


def _rebuffer(body, mapping, prefix):
    """Accesses to mapping's buffers redirected to their replacements, with index `prefix`
    put in front (a thread's copy) when given."""
    if not mapping:
        return body

    def idx(indices):
        return tuple(indices) if prefix is None else (prefix,) + tuple(indices)

    def post(n):
        if isinstance(n, E.BufferLoad) and n.buffer in mapping:
            return E.BufferLoad(mapping[n.buffer], idx(n.indices), n.dtype)
        if isinstance(n, S.BufferStore) and n.buffer in mapping:
            return S.BufferStore(mapping[n.buffer], n.value, idx(n.indices))
        if isinstance(n, S.Allocate) and n.buffer in mapping:
            return S.Allocate(mapping[n.buffer], n.body)
        return None
    return transform(body, post)


class _Serializer:
    def __init__(self, threads, order):
        self.threads = threads           # [(Var, extent)] threadIdx.z, .y, .x
        self.order = order
        self.count = math.prod(n for _, n in threads)

    def tid(self):
        out = None
        for var, n in self.threads:
            out = var if out is None else out * n + var
        return out if out is not None else E.Const(0, "int32")

    def each_thread(self, s):
        """s run by every thread of the block, one after another."""
        if not self.threads or S.is_no_op(s):
            return s
        for var, n in reversed(self.threads):
            if self.order == "reverse":
                fresh = E.Var(var.name + ".rev", var.dtype)
                s = S.For(fresh, 0, n, S.ForKind.SERIAL, substitute(s, {var: (n - 1) - fresh}))
            else:
                s = S.For(var, 0, n, S.ForKind.SERIAL, s)
        return s

    def run(self, s):
        if not G.contains_barrier(s):
            return self.each_thread(s)
        if G.is_barrier(s):
            return S.no_op()
        if isinstance(s, S.SeqStmt):
            out, pending = [], []
            for c in s.seq:
                if G.contains_barrier(c):
                    out += [self.each_thread(S.seq(*pending)), self.run(c)]
                    pending = []
                else:
                    pending.append(c)
            out.append(self.each_thread(S.seq(*pending)))
            return S.seq(*[x for x in out if not S.is_no_op(x)])
        if isinstance(s, S.For):
            return S.For(s.var, s.min, s.extent, S.ForKind.SERIAL, self.run(s.body))
        if isinstance(s, S.IfThenElse):
            return S.IfThenElse(s.cond, self.run(s.then_case),
                                self.run(s.else_case) if s.else_case is not None else None)
        if isinstance(s, S.AttrStmt):
            return S.AttrStmt(s.key, s.node, s.value, self.run(s.body))
        if isinstance(s, S.Allocate):   # a thread's local buffer across a barrier: one per thread
            buf = s.buffer
            mine = S.Buffer(f"{buf.name}.per_thread", (self.count,) + tuple(buf.shape), buf.dtype, "global")
            return S.Allocate(mine, self.run(_rebuffer(s.body, {buf: mine}, self.tid())))
        raise TypeError(f"emulation: unexpected {type(s).__name__} around a barrier")


def build_emulation(gf: GpuFunction, thread_order="forward"):
    """Compile the emulation for this machine -> a callable f(*arrays) (inputs then outputs)."""
    from ...build import CompiledKernel, cpu_passes
    from ...target import Target
    from ..emit import emit_object, optimize, parse
    from ..llvm_codegen import LLVMCodegen
    func = emulation_func(gf, thread_order)
    for _, fn in cpu_passes():
        func = fn(func)
    target = Target.host(threads=1)
    cg = LLVMCodegen(target, module_name=gf.name)
    cg.add_kernel(func)
    mod = optimize(parse(str(cg.module)), target)
    specs = [(tuple(b.shape), b.dtype) for b in func.params]
    lib = CompiledKernel(gf.name, target.triple, emit_object(mod, target), str(mod), specs, repr(func)).load()

    def run(*arrays):
        lib.run(gf.name, list(arrays))
    return run


def emulate(schedule, args, inputs, name="kernel", thread_order="forward"):
    """Lower a GPU schedule, run it on the CPU on numpy `inputs`, and return its outputs."""
    gf = lower_gpu(schedule, args, name, check=True)
    outputs = [np.zeros(tuple(b.shape), b.dtype) for b in gf.params[len(inputs):]]
    build_emulation(gf, thread_order)(*inputs, *outputs)
    return outputs
