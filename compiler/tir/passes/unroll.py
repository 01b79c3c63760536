"""unroll_loops: replicate the body of each `unroll`ed loop with its index made constant.

Loops with a non-constant extent or more than MAX_UNROLL iterations stay loops (and keep a
serial kind): unrolling them would not remove index arithmetic and only grows the code."""
from .. import expr as E
from ..functor import transform, substitute
from ..stmt import For, ForKind, seq

MAX_UNROLL = 64


def unroll_loops(func):
    def post(n):
        if isinstance(n, For) and n.kind is ForKind.UNROLLED:
            if isinstance(n.extent, E.Const) and isinstance(n.min, E.Const) and n.extent.value <= MAX_UNROLL:
                return seq(*[substitute(n.body, {n.var: E.Const(n.min.value + k, n.var.dtype)})
                             for k in range(n.extent.value)])
            return For(n.var, n.min, n.extent, ForKind.SERIAL, n.body, n.annotations)
        return None
    return func.with_body(transform(func.body, post))
