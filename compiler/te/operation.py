"""The tensor-expression language: placeholder, compute, reductions, select and casts."""
from __future__ import annotations

import inspect
import itertools

from ..tir import dtype as dt
from ..tir import expr as E
from .tensor import IterVar, PlaceholderOp, ComputeOp, Tensor

_names = itertools.count()


def placeholder(shape, dtype="float32", name="placeholder") -> Tensor:
    """An input tensor of static `shape`."""
    shape = tuple(int(s) for s in shape)
    if any(s <= 0 for s in shape):
        raise ValueError(f"placeholder {name}: every dimension must be positive, got {shape}")
    return Tensor(PlaceholderOp(name, shape, dt.check(dtype)))


def reduce_axis(dom, name="k") -> IterVar:
    """A reduction axis over [lo, hi)."""
    lo, hi = dom
    return IterVar(int(hi) - int(lo), name, kind="reduce", dom_min=int(lo))


def compute(shape, fcompute, name="compute", tag="", attrs=None) -> Tensor:
    """out[i0, i1, ...] = fcompute(i0, i1, ...) over the static `shape`.

    fcompute returns an expression; a reduction (te.sum/max/min) may only appear at the top.
    """
    shape = tuple(int(s) for s in shape)
    nargs = len(inspect.signature(fcompute).parameters)
    params = list(inspect.signature(fcompute).parameters)
    varargs = any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(fcompute).parameters.values())
    if not varargs and nargs != len(shape):
        raise TypeError(f"compute {name}: fcompute takes {nargs} indices but the shape has "
                        f"{len(shape)} dimensions")
    names = params if not varargs else [f"i{k}" for k in range(len(shape))]
    axis = [IterVar(s, n) for s, n in zip(shape, names)]
    body = E.to_expr(fcompute(*[iv.var for iv in axis]))
    _check_reduce_at_top(body, name)
    return Tensor(ComputeOp(name, axis, body, tag, attrs))


def _check_reduce_at_top(body, name):
    from ..tir.functor import visit
    inner = body.source if isinstance(body, E.Reduce) else body
    def f(n):
        if isinstance(n, E.Reduce):
            raise ValueError(f"compute {name}: a reduction must be the whole body, not nested "
                             "inside another expression; compute it as a separate tensor")
    visit(inner, f)


def _reducer(combiner):
    def reduce(expr, axis, where=None):
        axis = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        for a in axis:
            if not isinstance(a, IterVar) or a.kind != "reduce":
                raise TypeError(f"te.{combiner}: axis {a!r} is not a te.reduce_axis")
        return E.Reduce(combiner, E.to_expr(expr), axis, where)
    reduce.__name__ = combiner
    reduce.__doc__ = f"{combiner} of expr over the reduction axes (optionally only where `where`)."
    return reduce


sum = _reducer("sum")  # noqa: A001 - mirrors the reduction's name
max = _reducer("max")  # noqa: A001
min = _reducer("min")  # noqa: A001
fmax = _reducer("fmax")   # the largest element that is not NaN: see tir.expr.Reduce


def if_then_else(cond, t, f) -> E.Expr:
    """cond ? t : f; literals adopt the other branch's dtype."""
    cond = E.to_expr(cond)
    if not isinstance(t, E.Expr) and isinstance(f, E.Expr):
        t = E.to_expr(t, f.dtype)
    elif not isinstance(f, E.Expr) and isinstance(t, E.Expr):
        f = E.to_expr(f, t.dtype)
    return E.Select(cond, E.to_expr(t), E.to_expr(f))


def cast(dtype, value) -> E.Expr:
    return E.cast(dt.check(dtype), value)


def const(value, dtype="int32") -> E.Expr:
    return E.Const(value, dtype)


def all(*conds):  # noqa: A001
    return E.all_of(*conds)


def call(name, *args, dtype=None):
    args = [E.to_expr(a) for a in args]
    return E.Call(name, args, dtype or args[0].dtype)


def exp(x): return call("exp", x)
def log(x): return call("log", x)
def sqrt(x): return call("sqrt", x)
def tanh(x): return call("tanh", x)
def fabs(x): return call("fabs", x)
def floor(x): return call("floor", x)
def round(x): return call("round", x)  # noqa: A001 - rounds half to even


def maximum(a, b): return E.max_expr(a, b)
def minimum(a, b): return E.min_expr(a, b)
