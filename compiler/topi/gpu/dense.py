"""dense / matmul [M, K] x [N, K]^T: block tiles of the output, a register tile per thread,
and the K loop in steps whose slices of both operands the block stages in shared memory.

A block of TY x TX threads computes a (TY*RY) x (TX*RX) tile; each thread RY x RX outputs held
in registers. For each KT-wide step of K, the block copies the tile's rows of x and of the
weight into shared memory (all threads together, coalesced), waits, and every thread reads
them there: each operand element comes from global memory once per block instead of once per
output. Outputs smaller than one 8 x 8 tile use one thread per output.
"""
from __future__ import annotations

from ... import te
from ...tir import dtype as dt
from .. import tags
from .common import accumulator, bind_flat
from .cross_thread import bind_outputs, reduce_length, reducer, row_factored_sharing_pays
from .reduction import schedule_reduction

KT = 8          # K step staged in shared memory
TILES = ((16, 4), (16, 2), (16, 1), (8, 1))   # (threads, outputs per thread) along one side


def register_tile(n):
    """(threads, outputs per thread) along a side of n outputs; None below one 8-thread tile."""
    for threads, per_thread in TILES:
        if n >= threads * per_thread:
            return threads, per_thread
    return None


def schedule_dense(s, red, out):
    if len(out.op.shape) != 2 or len(red.reduce_axis) != 1:
        return schedule_reduction(s, red, out)
    m, n = out.op.shape
    if register_tile(m) is None or register_tile(n) is None:
        return schedule_reduction(s, red, out)
    (ty_n, ry), (tx_n, rx) = register_tile(m), register_tile(n)
    acc = accumulator(s, red, out)
    caches = [s.cache_read(t, "shared", [acc]) for t in acc.op.input_tensors]
    i, j = out.axis
    bi, ii = out.split(i, ty_n * ry)
    ty, yi = out.split(ii, ry)
    bj, jj = out.split(j, tx_n * rx)
    tx, xi = out.split(jj, rx)
    out.reorder(bi, bj, ty, tx, yi, xi)
    out.bind(bi, "blockIdx.y")
    out.bind(bj, "blockIdx.x")
    out.bind(ty, "threadIdx.y")
    out.bind(tx, "threadIdx.x")
    acc.compute_at(out, tx)
    ai, aj = acc.axis
    k = acc.reduce_axis[0]
    ko, ki = acc.split(k, min(KT, k.extent))
    acc.reorder(ko, ki, ai, aj)
    for c in caches:
        s[c].compute_at(acc, ko)


def schedule_row_factored_dense(s, partial, red, out):
    """topi.dense's row-factored form (a CPU vectorization: 16 partial sums over K, then their
    sum): the 16 partial sums of an output are 16 threads', summed across them
    (row_factored_sharing_pays); K shorter than a warp: one output per thread, its 16 partial sums
    in registers."""
    if row_factored_sharing_pays(reduce_length(partial) * reduce_length(red)):
        return _row_factored_across_threads(s, partial, red, out)
    acc = accumulator(s, red, out)
    partial.set_scope("local")
    _, tx = bind_flat(out)
    partial.compute_at(out, tx)
    acc.compute_at(out, tx)


def _row_factored_across_threads(s, partial, red, out):
    """Thread l of an output sums partial[l] (K elements l, l + 16, ...: adjacent threads read
    adjacent elements), then the 16 threads sum theirs."""
    (lanes,) = [iv.extent for iv in red.reduce_axis]
    ty = bind_outputs(out, lanes)
    red = reducer(s, red, out, ty)
    (lane,) = red.reduce_axis
    red.bind(lane, "threadIdx.x")
    partial.set_scope("local")
    partial.compute_at(red, lane)


def dense(x, weight, bias=None, out_dtype=None):
    """x [M, K] @ weight[N, K]^T (+ bias [N]) as one reduction over K: topi.dense's semantics in
    the form schedule_dense tiles (topi.dense factors K by 16 for CPU vectors)."""
    (m, k), (n, k2) = x.shape, weight.shape
    if k != k2:
        raise ValueError(f"dense: x {list(x.shape)} and weight {list(weight.shape)} disagree on K")
    acc = out_dtype or ("int32" if dt.is_int(x.dtype) else x.dtype)
    r = te.reduce_axis((0, k), "k")
    out = te.compute((m, n), lambda i, j: te.sum(te.cast(acc, x(i, r.var)) * te.cast(acc, weight(j, r.var)), axis=r),
                     name="dense", tag=tags.DENSE)
    if bias is not None:
        out = te.compute((m, n), lambda i, j: out(i, j) + bias(j), name="bias_add", tag=tags.BROADCAST)
    return out
