"""unroll_loops: replicate the body of each `unroll`ed loop with its index made constant.

Loops with a non-constant extent or more than MAX_UNROLL iterations stay loops (and keep a
serial kind): unrolling them would not remove index arithmetic and only grows the code.

Each copy is simplified as it is made: a select chain over the index (a Winograd transform's
rows) keeps one branch, so an unrolled loop nest around it (the inner loop is unrolled first)
copies the chain's taken branches, not the whole chain once per iteration of every loop. An
F(4x4, 3x3) kernel compiled in 4.7 s without this, most of it walking the copies."""
from .. import expr as E
from ..arith import simplify
from ..functor import transform, substitute
from ..stmt import For, ForKind, seq

MAX_UNROLL = 64


def unroll_loops(func):
    def post(n):
        if isinstance(n, For) and n.kind is ForKind.UNROLLED:
            if isinstance(n.extent, E.Const) and isinstance(n.min, E.Const) and n.extent.value <= MAX_UNROLL:
                return seq(*[simplify(substitute(n.body, {n.var: E.Const(n.min.value + k, n.var.dtype)}))
                             for k in range(n.extent.value)])
            return For(n.var, n.min, n.extent, ForKind.SERIAL, n.body, n.annotations)
        return None
    return func.with_body(transform(func.body, post))
