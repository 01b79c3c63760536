"""vectorize_loops: a `vectorize`d loop becomes vector expressions of `extent` lanes.

The loop index becomes Ramp(min, 1, lanes); arithmetic on ramps stays a ramp while it is
affine (so contiguous accesses become single vector loads/stores), and anything else becomes
lane-wise vector operations (gathers/scatters for non-affine indices). A loop that cannot be
vectorized this way (an inner loop, a condition or a store address that does not depend on
the lanes consistently) is kept as a serial loop marked for the backend's own vectorizer, so
the result is always correct.
Runs after flatten_buffers (accesses have one flat index).
"""
from __future__ import annotations

import math

from .. import dtype as dt
from .. import expr as E
from ..functor import transform, uses_var
from ..stmt import For, ForKind, BufferStore, SeqStmt, IfThenElse, Allocate
from ..arith import linear, simplify


# Control flow, not an error: the pass catches it and leaves the loop serial (annotated with
# the reason), so it never escapes and stays off the VdlaError tree (vdla.hw.errors).
class _CannotVectorize(Exception):
    pass


def _bcast(e, lanes):
    if dt.lanes(e.dtype) == lanes:
        return e
    return E.Broadcast(e, lanes)


def _one_quotient(ramp, d: int) -> bool:
    """Whether every lane of `ramp` has one quotient by d whatever values its base's variables
    take: the base is k modulo g = gcd(d, its coefficients), so its remainder by d is at most
    d - g + k % g, and the lanes past it must stay below d. (A packed layout's block index:
    c // 16 over 8 lanes of c = 8 i.)"""
    terms, k = linear(ramp.base)
    g = d
    for _, coeff in terms.values():
        g = math.gcd(g, coeff)
    return k % g + (ramp.lanes - 1) * ramp.stride.value < g


def _vec_expr(e, var, lanes, ramp):
    """Vector form of e (or e itself when it does not depend on var)."""
    if not uses_var(e, var):
        return e
    if e is var:
        return ramp
    if isinstance(e, E.BinaryOp):
        a = _vec_expr(e.a, var, lanes, ramp)
        b = _vec_expr(e.b, var, lanes, ramp)
        if dt.lanes(a.dtype) == 1 and dt.lanes(b.dtype) == 1:     # one value for every lane
            return type(e)(a, b)
        if isinstance(e, (E.Add, E.Sub)):
            for x, y, flip in ((a, b, False), (b, a, True)):
                if isinstance(x, E.Ramp) and dt.lanes(y.dtype) == 1:
                    base = (E.Add(x.base, y) if isinstance(e, E.Add) else
                            (E.Sub(y, x.base) if flip else E.Sub(x.base, y)))
                    if isinstance(e, E.Sub) and flip:
                        return E.Ramp(simplify(base), simplify(E.Sub(E.Const(0, y.dtype), x.stride)), lanes)
                    return E.Ramp(simplify(base), x.stride, lanes)
            if isinstance(a, E.Ramp) and isinstance(b, E.Ramp):
                cls = type(e)
                return E.Ramp(simplify(cls(a.base, b.base)), simplify(cls(a.stride, b.stride)), lanes)
        if isinstance(e, E.Mul):
            for x, y in ((a, b), (b, a)):
                if isinstance(x, E.Ramp) and dt.lanes(y.dtype) == 1:
                    return E.Ramp(simplify(E.Mul(x.base, y)), simplify(E.Mul(x.stride, y)), lanes)
        if isinstance(e, (E.FloorDiv, E.FloorMod)) and isinstance(a, E.Ramp) and isinstance(b, E.Const) \
                and b.value > 0 and isinstance(a.stride, E.Const) and a.stride.value >= 0 and _one_quotient(a, b.value):
            if isinstance(e, E.FloorDiv):        # one value for the lanes: a scalar, broadcast where used
                return simplify(E.FloorDiv(a.base, b))
            return E.Ramp(simplify(E.FloorMod(a.base, b)), a.stride, lanes)
        a, b = _bcast(a, lanes), _bcast(b, lanes)
        return type(e)(a, b)
    if isinstance(e, E.Not):
        return E.Not(_vec_expr(e.a, var, lanes, ramp))
    if isinstance(e, E.Select):
        c = _bcast(_vec_expr(e.cond, var, lanes, ramp), lanes)
        return E.Select(c, _bcast(_vec_expr(e.t, var, lanes, ramp), lanes),
                        _bcast(_vec_expr(e.f, var, lanes, ramp), lanes))
    if isinstance(e, E.Cast):
        return E.Cast(dt.scalar(e.dtype), _vec_expr(e.value, var, lanes, ramp))
    if isinstance(e, E.Call):
        args = [_bcast(_vec_expr(a, var, lanes, ramp), lanes) for a in e.args]
        return E.Call(e.name, args, dt.with_lanes(e.dtype, lanes))
    if isinstance(e, E.BufferLoad):
        idx = _vec_expr(e.indices[0], var, lanes, ramp)
        return E.BufferLoad(e.buffer, [idx], dt.with_lanes(e.buffer.dtype, lanes))
    if isinstance(e, (E.Ramp, E.Broadcast)):
        raise _CannotVectorize("nested vectors")
    raise _CannotVectorize(f"cannot vectorize {type(e).__name__}")


def _vec_stmt(s, var, lanes, ramp):
    if isinstance(s, SeqStmt):
        return SeqStmt([_vec_stmt(c, var, lanes, ramp) for c in s.seq])
    if isinstance(s, BufferStore):
        idx = _vec_expr(s.indices[0], var, lanes, ramp)
        if dt.lanes(idx.dtype) == 1:
            raise _CannotVectorize(f"store to {s.buffer.name} does not depend on the vector lanes")
        if isinstance(idx, E.Ramp) and not isinstance(idx.stride, E.Const):
            raise _CannotVectorize("symbolic stride")
        if isinstance(idx, E.Ramp) and E.is_const(idx.stride, 0):
            raise _CannotVectorize("all lanes store to one address")
        val = _bcast(_vec_expr(s.value, var, lanes, ramp), lanes)
        return BufferStore(s.buffer, val, [idx])
    if isinstance(s, IfThenElse) and not uses_var(s.cond, var):
        return IfThenElse(s.cond, _vec_stmt(s.then_case, var, lanes, ramp),
                          None if s.else_case is None else _vec_stmt(s.else_case, var, lanes, ramp))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _vec_stmt(s.body, var, lanes, ramp))
    raise _CannotVectorize(f"{type(s).__name__} inside a vectorized loop")


def vectorize_loops(func):
    def post(n):
        if isinstance(n, For) and n.kind is ForKind.VECTORIZED:
            if not isinstance(n.extent, E.Const):
                return For(n.var, n.min, n.extent, ForKind.SERIAL, n.body,
                           {**n.annotations, "vectorize_hint": True})
            lanes = n.extent.value
            if lanes == 1:
                from ..functor import substitute
                return substitute(n.body, {n.var: n.min})
            ramp = E.Ramp(n.min, E.Const(1, n.var.dtype), lanes)
            try:
                return _vec_stmt(n.body, n.var, lanes, ramp)
            except _CannotVectorize as why:
                return For(n.var, n.min, n.extent, ForKind.SERIAL, n.body,
                           {**n.annotations, "vectorize_hint": True, "not_vectorized": str(why)})
        return None
    return func.with_body(transform(func.body, post))
