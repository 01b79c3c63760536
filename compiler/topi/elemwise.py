"""Elementwise operators with numpy broadcasting, and activation functions."""
from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import dtype as dt
from . import tags


def broadcast_shape(*shapes):
    """numpy's broadcast of static shapes; raises naming both shapes when incompatible."""
    nd = max(len(s) for s in shapes)
    out = []
    for k in range(nd):
        dims = {s[len(s) - nd + k] for s in shapes if len(s) - nd + k >= 0} - {1}
        if len(dims) > 1:
            raise ValueError(f"shapes {[list(s) for s in shapes]} do not broadcast (axis {k}: {sorted(dims)})")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _reader(x, out_shape):
    """index function out-index -> x's value (broadcast), or a literal."""
    if not isinstance(x, te.Tensor):
        return lambda idx: x
    off = len(out_shape) - len(x.shape)
    return lambda idx: x(*[0 if x.shape[k] == 1 and out_shape[k + off] != 1 else idx[k + off]
                           for k in range(len(x.shape))])


def _dtype_of(args):
    for a in args:
        if isinstance(a, te.Tensor):
            return a.dtype
    raise TypeError("an elementwise operator needs at least one tensor argument")


def _literal(x, dtype):
    if isinstance(x, te.Tensor) or isinstance(x, E.Expr):
        return x
    return E.to_expr(x, dtype)


def broadcast_op(f, *args, name="broadcast", tag=tags.BROADCAST):
    dtype = _dtype_of(args)
    for a in args:
        if isinstance(a, te.Tensor) and a.dtype != dtype:
            raise TypeError(f"{name}: inputs have dtypes {[getattr(x, 'dtype', type(x).__name__) for x in args]}; "
                            "cast them to one dtype first (topi.cast)")
    args = [_literal(a, dtype) for a in args]
    shapes = [a.shape for a in args if isinstance(a, te.Tensor)]
    out_shape = broadcast_shape(*shapes)
    readers = [_reader(a, out_shape) for a in args]
    same = all(isinstance(a, te.Tensor) and a.shape == out_shape or not isinstance(a, te.Tensor) for a in args)
    return te.compute(out_shape, lambda *i: f(*[r(i) for r in readers]), name=name,
                      tag=tags.ELEMWISE if same else tag)


def add(a, b): return broadcast_op(lambda x, y: x + y, a, b, name="add")
def subtract(a, b): return broadcast_op(lambda x, y: x - y, a, b, name="subtract")
def multiply(a, b): return broadcast_op(lambda x, y: x * y, a, b, name="multiply")
def maximum(a, b): return broadcast_op(lambda x, y: E.max_expr(x, y), a, b, name="maximum")
def minimum(a, b): return broadcast_op(lambda x, y: E.min_expr(x, y), a, b, name="minimum")


def divide(a, b):
    """True division for floats; floor division for integers (numpy's // semantics)."""
    dtype = _dtype_of([a, b])
    if dt.is_float(dtype):
        return broadcast_op(lambda x, y: x / y, a, b, name="divide")
    return broadcast_op(lambda x, y: x // y, a, b, name="floor_divide")


def power(a, b):
    return broadcast_op(lambda x, y: E.Call("pow", [x, y], x.dtype), a, b, name="power")


def where(cond, a, b):
    """cond ? a : b with broadcasting; cond is a bool tensor."""
    dtype = _dtype_of([a, b])
    a, b = _literal(a, dtype), _literal(b, dtype)
    shapes = [t.shape for t in (cond, a, b) if isinstance(t, te.Tensor)]
    out = broadcast_shape(*shapes)
    rc, ra, rb = _reader(cond, out), _reader(a, out), _reader(b, out)
    return te.compute(out, lambda *i: E.Select(rc(i), E.to_expr(ra(i)), E.to_expr(rb(i))),
                      name="where", tag=tags.BROADCAST)


def unary(f, x, name, tag=tags.ELEMWISE):
    return te.compute(x.shape, lambda *i: f(x(*i)), name=name, tag=tag)


def _c(v, x):
    return E.to_expr(v, x.dtype)


def negative(x): return unary(lambda v: _c(0, v) - v, x, "negative")
def relu(x): return unary(lambda v: E.max_expr(v, _c(0, v)), x, "relu")
def exp(x): return unary(te.exp, x, "exp")
def log(x): return unary(te.log, x, "log")
def sqrt(x): return unary(te.sqrt, x, "sqrt")
def tanh(x): return unary(te.tanh, x, "tanh")
def abs(x):  # noqa: A001
    if dt.is_float(x.dtype):
        return unary(te.fabs, x, "abs")
    return unary(lambda v: E.Select(v < _c(0, v), _c(0, v) - v, v), x, "abs")
def sigmoid(x): return unary(lambda v: E.Call("sigmoid", [v], v.dtype), x, "sigmoid")
def erf(x): return unary(lambda v: E.Call("erf", [v], v.dtype), x, "erf")
def floor(x): return unary(te.floor, x, "floor")
def round(x): return unary(te.round, x, "round")  # noqa: A001  (half to even, like numpy)


def clip(x, a_min=None, a_max=None):
    def f(v):
        if a_min is not None:
            v = E.max_expr(v, _c(a_min, v))
        if a_max is not None:
            v = E.min_expr(v, _c(a_max, v))
        return v
    return unary(f, x, "clip")


def leaky_relu(x, alpha=0.01):
    return unary(lambda v: E.Select(v > _c(0, v), v, v * _c(alpha, v)), x, "leaky_relu")


def hard_sigmoid(x, alpha=0.2, beta=0.5):
    """ONNX HardSigmoid: max(0, min(1, alpha*x + beta))."""
    return unary(lambda v: E.max_expr(_c(0.0, v), E.min_expr(_c(1.0, v), v * _c(alpha, v) + _c(beta, v))),
                 x, "hard_sigmoid")


def hard_swish(x):
    """ONNX HardSwish: x * max(0, min(1, x/6 + 1/2))."""
    return unary(lambda v: v * E.max_expr(_c(0.0, v), E.min_expr(_c(1.0, v), v * _c(1 / 6, v) + _c(0.5, v))),
                 x, "hard_swish")


def cast(x, dtype):
    return unary(lambda v: te.cast(dtype, v), x, "cast")


def identity(x):
    return unary(lambda v: v, x, "identity")
