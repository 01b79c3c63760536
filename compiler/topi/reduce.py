"""Reductions over axes: sum, mean, max, min."""
from __future__ import annotations

import math

from .. import te
from ..tir import expr as E
from ..tir import dtype as dt
from . import tags


def _reduce(x, axes, keepdims, combiner, name):
    axes = list(range(x.ndim)) if axes is None else sorted(a % x.ndim for a in axes)
    out_shape = [1 if k in axes else s for k, s in enumerate(x.shape)] if keepdims else \
        [s for k, s in enumerate(x.shape) if k not in axes]
    rs = [te.reduce_axis((0, x.shape[a]), f"r{a}") for a in axes]
    reducer = {"sum": te.sum, "max": te.max, "min": te.min}[combiner]

    def f(*i):
        idx, it, ir_ = [], iter(i), iter(rs)
        for k in range(x.ndim):
            if k in axes:
                if keepdims:
                    next(it)
                idx.append(next(ir_).var)
            else:
                idx.append(next(it))
        return reducer(x(*idx), axis=rs)
    if not out_shape:
        out_shape = [1]
        g = f
        f = lambda _z: g()  # noqa: E731 - scalar results are stored as shape [1]
    return te.compute(out_shape, f, name=name, tag=tags.REDUCE)


def reduce_sum(x, axes=None, keepdims=False): return _reduce(x, axes, keepdims, "sum", "reduce_sum")
def reduce_max(x, axes=None, keepdims=False): return _reduce(x, axes, keepdims, "max", "reduce_max")
def reduce_min(x, axes=None, keepdims=False): return _reduce(x, axes, keepdims, "min", "reduce_min")


def reduce_mean(x, axes=None, keepdims=False):
    if not dt.is_float(x.dtype):
        raise TypeError(f"reduce_mean needs a float input, got {x.dtype}")
    s = reduce_sum(x, axes, keepdims)
    n = math.prod(x.shape[a % x.ndim] for a in (range(x.ndim) if axes is None else axes))
    return te.compute(s.shape, lambda *i: s(*i) * E.Const(1.0 / n, x.dtype), name="reduce_mean",
                      tag=tags.ELEMWISE)
