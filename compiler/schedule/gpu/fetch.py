"""cooperative_fetch: the threads of a block fill its shared buffers together, between barriers.

A stage in "shared" scope is computed at a loop of its reader like any attached stage, and its
region covers what every thread of the block reads there (lower.py relaxes the thread axes). Its
nest is written once per block, so the block's threads split it: the nest's loops are fused into
one flat index over the region, and thread t of T copies elements t, t + T, t + 2T, ... (adjacent
threads touch adjacent elements, so the global loads coalesce). A nest whose loops the schedule
already bound to threadIdx.* is left as written.

Barriers: after a fetch, so no thread reads the buffer before every thread has written its part;
and before a fetch that sits in a loop, so no thread overwrites the buffer while another still
reads the previous iteration's data. Fetches at one loop share them (one before, one after all).
"""
from __future__ import annotations

import math

from vdla.driver import gpu_limits as limits

from ...tir import expr as E
from ...tir import gpu as G
from ...tir import stmt as S
from ...tir.functor import free_vars, substitute, visit
from .function import GpuKernel


def cooperative_fetch(kernel: GpuKernel) -> GpuKernel:
    threads = _thread_vars(kernel.func.body)   # [(Var, extent)], threadIdx.z, .y, .x
    thread_set = {v for v, _ in threads}

    def rec(s, in_loop):
        if isinstance(s, S.AttrStmt) and s.key == G.SHARED_FETCH:
            nest = s.body
            if not (free_vars(nest) & thread_set):
                nest = _distribute(nest, threads, s.node.name)
            fetch = S.AttrStmt(s.key, s.node, s.value, nest)
            return S.seq(*([G.barrier()] if in_loop else []), fetch, G.barrier())
        if isinstance(s, S.For):
            inner = rec(s.body, in_loop or G.thread_tag(s) is None)
            return S.For(s.var, s.min, s.extent, s.kind, inner, s.annotations) if inner is not s.body else s
        if isinstance(s, S.SeqStmt):
            return _drop_repeated_barriers([rec(c, in_loop) for c in s.seq])
        if isinstance(s, S.IfThenElse):
            return S.IfThenElse(s.cond, rec(s.then_case, in_loop),
                                rec(s.else_case, in_loop) if s.else_case is not None else None)
        if isinstance(s, (S.Allocate, S.AttrStmt)):
            inner = rec(s.body, in_loop)
            if inner is s.body:
                return s
            return S.Allocate(s.buffer, inner) if isinstance(s, S.Allocate) else \
                S.AttrStmt(s.key, s.node, s.value, inner)
        return s
    return kernel.with_func(kernel.func.with_body(rec(kernel.func.body, False)))


def _thread_vars(body):
    found = {}
    s = body
    while G.thread_tag(s) is not None:
        if G.is_thread_tag(G.thread_tag(s)):
            found[G.thread_tag(s)] = (s.var, s.extent.value)
        s = s.body
    return [found[t] for t in reversed(limits.THREAD_TAGS) if t in found]


def linear_thread_index(threads):
    """threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z), CUDA's order."""
    out = None
    for var, ext in threads:           # z, y, x
        out = var if out is None else out * ext + var
    return out if out is not None else E.Const(0, "int32")


def _distribute(nest, threads, buf_name):
    loops, inner = [], nest
    while isinstance(inner, S.For) and isinstance(inner.extent, E.Const) and isinstance(inner.min, E.Const):
        loops.append(inner)
        inner = inner.body
    nthreads = math.prod(ext for _, ext in threads)
    tid = linear_thread_index(threads)
    if nthreads == 1:
        return nest
    if not loops:                       # one element: the first thread writes it
        return S.IfThenElse(tid.equal(0), nest)
    size = math.prod(l.extent.value for l in loops)
    rounds = -(-size // nthreads)
    if rounds == 1:
        flat, round_loop = tid, None
    else:
        round_loop = E.Var(f"{buf_name}.fetch")
        flat = round_loop * nthreads + tid
    mapping, stride = {}, size
    for l in loops:
        stride //= l.extent.value
        part = flat // stride if stride > 1 else flat
        if l is not loops[0]:
            part = part % l.extent.value
        mapping[l.var] = part + l.min.value if l.min.value else part
    body = substitute(inner, mapping)
    if size % nthreads:
        body = S.IfThenElse(flat < size, body)
    if round_loop is None:
        return body
    return S.For(round_loop, 0, rounds, S.ForKind.SERIAL, body)


def _drop_repeated_barriers(stmts):
    """Flatten, and drop the barriers that order nothing: one right after another, and one
    between two fetches when the second does not read what the first wrote (two buffers
    filled at one loop need one barrier before and one after both)."""
    flat = S.seq(*stmts)
    items = list(flat.seq) if isinstance(flat, S.SeqStmt) else [flat]
    out = []
    for k, s in enumerate(items):
        if G.is_barrier(s) and out and G.is_barrier(out[-1]):
            continue
        nxt = next((x for x in items[k + 1:] if not G.is_barrier(x)), None)
        if G.is_barrier(s) and out and _is_fetch(out[-1]) and _is_fetch(nxt) and not _reads(nxt, out[-1].node):
            continue
        out.append(s)
    return S.seq(*out)


def _is_fetch(s):
    return isinstance(s, S.AttrStmt) and s.key == G.SHARED_FETCH


def _reads(s, buf):
    found = []
    visit(s, lambda n: found.append(n) if isinstance(n, E.BufferLoad) and n.buffer is buf else None)
    return bool(found)
