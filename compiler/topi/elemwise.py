"""Elementwise operators with numpy broadcasting, and activation functions."""
from __future__ import annotations

import math

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
def maximum(a, b): return broadcast_op(lambda x, y: _nan_first(x, y, E.max_expr), a, b, name="maximum")
def minimum(a, b): return broadcast_op(lambda x, y: _nan_first(x, y, E.min_expr), a, b, name="minimum")


def _nan_first(x, y, fn):
    """fn(x, y), but NaN when either is (numpy's and ONNX Min/Max's rule): the generated min/max
    is an ordered compare-and-select, which answers y for a NaN x."""
    if not dt.is_float(x.dtype):
        return fn(x, y)
    return E.Select(x.equal(x), fn(x, y), x)


def equal(a, b): return broadcast_op(lambda x, y: x.equal(y), a, b, name="equal")
def less(a, b): return broadcast_op(lambda x, y: x < y, a, b, name="less")
def greater(a, b): return broadcast_op(lambda x, y: x > y, a, b, name="greater")
def less_equal(a, b): return broadcast_op(lambda x, y: x <= y, a, b, name="less_equal")
def greater_equal(a, b): return broadcast_op(lambda x, y: x >= y, a, b, name="greater_equal")


def divide(a, b):
    """True division for floats; floor division for integers (numpy's // semantics)."""
    dtype = _dtype_of([a, b])
    if dt.is_float(dtype):
        return broadcast_op(lambda x, y: x / y, a, b, name="divide")
    return broadcast_op(lambda x, y: x // y, a, b, name="floor_divide")


def power(a, b):
    """a ** b for floats. The literal exponents models write for a square, a cube, a square root
    or a reciprocal become multiplies, sqrt or a division (as onnxruntime computes them), not a
    pow call."""
    if not isinstance(b, (te.Tensor, E.Expr)) and float(b) in _POWERS and isinstance(a, te.Tensor):
        return unary(_POWERS[float(b)], a, "power")
    return broadcast_op(lambda x, y: E.Call("pow", [x, y], x.dtype), a, b, name="power")


_POWERS = {1.0: lambda v: v, 2.0: lambda v: v * v, 3.0: lambda v: v * v * v, 0.5: te.sqrt,
           -1.0: lambda v: _c(1.0, v) / v}


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
# One element's expression of an activation: the ops below apply them over tensors, the
# recurrence kernel (topi/recurrent.py) inside its own loops.
def relu_expr(v): return E.max_expr(v, _c(0, v))
def sigmoid_expr(v): return E.Call("sigmoid", [v], v.dtype)
def softsign_expr(v): return v / (_c(1.0, v) + te.fabs(v))
def thresholded_relu_expr(v, alpha): return E.Select(v > _c(alpha, v), v, _c(0.0, v))
def leaky_relu_expr(v, alpha): return E.Select(v > _c(0, v), v, v * _c(alpha, v))
def elu_expr(v, alpha): return E.Select(v < _c(0.0, v), _c(alpha, v) * (te.exp(v) - _c(1.0, v)), v)


def hard_sigmoid_expr(v, alpha, beta):
    """ONNX HardSigmoid: max(0, min(1, alpha*x + beta))."""
    return E.max_expr(_c(0.0, v), E.min_expr(_c(1.0, v), v * _c(alpha, v) + _c(beta, v)))


def relu(x): return unary(relu_expr, x, "relu")
def exp(x): return unary(te.exp, x, "exp")
def log(x): return unary(te.log, x, "log")
def sqrt(x): return unary(te.sqrt, x, "sqrt")
def tanh(x): return unary(te.tanh, x, "tanh")
def abs(x):  # noqa: A001
    if dt.is_float(x.dtype):
        return unary(te.fabs, x, "abs")
    return unary(lambda v: E.Select(v < _c(0, v), _c(0, v) - v, v), x, "abs")
def sigmoid(x): return unary(sigmoid_expr, x, "sigmoid")
def erf(x): return unary(lambda v: E.Call("erf", [v], v.dtype), x, "erf")  # libm's erff: < 1 ulp
def reciprocal(x): return unary(lambda v: _c(1.0, v) / v, x, "reciprocal")
def floor(x): return unary(te.floor, x, "floor")
def ceil(x): return unary(lambda v: te.call("ceil", v), x, "ceil")
def round(x): return unary(te.round, x, "round")  # noqa: A001  (half to even, like numpy)
def logical_not(x): return unary(lambda v: E.Not(v), x, "not")


def sign(x):
    """-1, 0 or 1 (NaN stays NaN: both compares are false, and NaN selects itself)."""
    def f(v):
        zero = _c(0, v)
        return E.Select(v > zero, _c(1, v), E.Select(v < zero, _c(-1, v), v if dt.is_float(v.dtype) else zero))
    return unary(f, x, "sign")


def softsign(x): return unary(softsign_expr, x, "softsign")


def selu(x, alpha, gamma):
    """ONNX Selu: gamma * (alpha * (e^x - 1) below 0, x from 0 on)."""
    return unary(lambda v: _c(gamma, v) * E.Select(v > _c(0.0, v), v, _c(alpha, v) * (te.exp(v) - _c(1.0, v))),
                 x, "selu")


def celu(x, alpha):
    """ONNX Celu: max(0, x) + min(0, alpha * (e^(x / alpha) - 1))."""
    return unary(lambda v: E.max_expr(v, _c(0.0, v)) + E.min_expr(
        _c(0.0, v), _c(alpha, v) * (te.exp(v / _c(alpha, v)) - _c(1.0, v))), x, "celu")


def thresholded_relu(x, alpha):
    return unary(lambda v: thresholded_relu_expr(v, alpha), x, "thresholded_relu")


def logical(op, a, b):
    """And, Or, Xor of bool tensors, broadcast."""
    fn = {"And": lambda p, q: E.And(p, q), "Or": lambda p, q: E.Or(p, q),
          "Xor": lambda p, q: E.NE(p, q)}[op]
    return broadcast_op(fn, a, b, name=op.lower())


def clip(x, a_min=None, a_max=None):
    def f(v):
        if a_min is not None:
            v = E.max_expr(v, _c(a_min, v))
        if a_max is not None:
            v = E.min_expr(v, _c(a_max, v))
        return v
    return unary(f, x, "clip")


def leaky_relu(x, alpha=0.01):
    return unary(lambda v: leaky_relu_expr(v, alpha), x, "leaky_relu")


def hard_sigmoid(x, alpha=0.2, beta=0.5):
    return unary(lambda v: hard_sigmoid_expr(v, alpha, beta), x, "hard_sigmoid")


def hard_swish(x):
    """ONNX HardSwish: x * max(0, min(1, x/6 + 1/2))."""
    return unary(lambda v: v * E.max_expr(_c(0.0, v), E.min_expr(_c(1.0, v), v * _c(1 / 6, v) + _c(0.5, v))),
                 x, "hard_swish")


def cast(x, dtype):
    return unary(lambda v: te.cast(dtype, v), x, "cast")


def identity(x):
    return unary(lambda v: v, x, "identity")


def _log1p(u):
    """log(1 + u) to float precision for small u too: log(w) * u / (w - 1), w = 1 + u, cancels
    the rounding of w (Goldberg); log(w) alone loses u's digits below 1 ulp of 1."""
    w = _c(1.0, u) + u
    return E.Select(w.equal(_c(1.0, u)), u, te.log(w) * u / (w - _c(1.0, u)))


def softplus_expr(v):
    """log(1 + e^v) = max(v, 0) + log(1 + e^-|v|): e^-|v| <= 1 never overflows."""
    return E.max_expr(v, _c(0.0, v)) + _log1p(te.exp(_c(0.0, v) - te.fabs(v)))


def softplus(x): return unary(softplus_expr, x, "softplus")
def mish(x): return unary(lambda v: v * te.tanh(softplus_expr(v)), x, "mish")     # x tanh(softplus(x))


def elu(x, alpha=1.0):
    """ONNX Elu: alpha * (e^x - 1) below 0, x from 0 on."""
    return unary(lambda v: elu_expr(v, alpha), x, "elu")


def prelu(x, slope):
    """ONNX PRelu: slope * x below 0; the slope broadcasts to x's shape."""
    if broadcast_shape(x.shape, getattr(slope, "shape", ())) != tuple(x.shape):
        raise ValueError(f"PRelu slope of shape {list(slope.shape)} does not broadcast to x's {list(x.shape)}")
    return broadcast_op(lambda v, s: E.Select(v < _c(0, v), v * s, v), x, slope, name="prelu")


def gelu(x, approximate="none"):
    """ONNX Gelu: x/2 * (1 + erf(x / sqrt 2)), or with "tanh" its tanh approximation."""
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        return unary(lambda v: _c(0.5, v) * v * (_c(1.0, v) + te.tanh(_c(k, v) * (v + _c(0.044715, v) * v * v * v))),
                     x, "gelu_tanh")
    return unary(lambda v: _c(0.5, v) * v * (_c(1.0, v) + E.Call("erf", [v * _c(math.sqrt(0.5), v)], v.dtype)),
                 x, "gelu")


def swish(x, alpha=1.0):
    """x * sigmoid(alpha * x) (SiLU for alpha 1)."""
    return unary(lambda v: v * E.Call("sigmoid", [v * _c(alpha, v) if alpha != 1.0 else v], v.dtype), x, "swish")
