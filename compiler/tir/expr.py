"""Expression nodes shared by tensor expressions (te) and the loop IR.

Every node is immutable and lists its children in `_fields`, so generic visitors and
mutators (see functor.py) can walk any tree without a case per node type. Each node states
its text form (__repr__, Python-like) beside its definition, as statements do (stmt.py).
"""
from __future__ import annotations

import itertools

from . import dtype as dt

_ids = itertools.count()


class Node:
    _fields: tuple[str, ...] = ()

    def children(self):
        for f in self._fields:
            yield f, getattr(self, f)

    def __repr__(self):
        return f"<{type(self).__name__}>"


class Expr(Node):
    dtype: str = "int32"

    # Arithmetic operators build nodes; literals adopt the other operand's type.
    def __add__(self, o): return binary(Add, self, o)
    def __radd__(self, o): return binary(Add, o, self)
    def __sub__(self, o): return binary(Sub, self, o)
    def __rsub__(self, o): return binary(Sub, o, self)
    def __mul__(self, o): return binary(Mul, self, o)
    def __rmul__(self, o): return binary(Mul, o, self)
    def __truediv__(self, o): return binary(Div, self, o)
    def __rtruediv__(self, o): return binary(Div, o, self)
    def __floordiv__(self, o): return binary(FloorDiv, self, o)
    def __rfloordiv__(self, o): return binary(FloorDiv, o, self)
    def __mod__(self, o): return binary(FloorMod, self, o)
    def __rmod__(self, o): return binary(FloorMod, o, self)
    def __neg__(self): return binary(Sub, const(0, self.dtype), self)
    def __lt__(self, o): return binary(LT, self, o)
    def __le__(self, o): return binary(LE, self, o)
    def __gt__(self, o): return binary(GT, self, o)
    def __ge__(self, o): return binary(GE, self, o)
    def equal(self, o): return binary(EQ, self, o)
    def not_equal(self, o): return binary(NE, self, o)
    def __and__(self, o): return binary(And, self, o)
    def __or__(self, o): return binary(Or, self, o)
    def __invert__(self): return Not(self)
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError(f"the truth value of the expression {self!r} is not known at "
                        "definition time; use te.if_then_else / te.all instead of if/and/or")

    def astype(self, dtype):
        return cast(dtype, self)


class Var(Expr):
    """A scalar variable: a loop index, an iteration axis or a symbolic parameter."""

    def __init__(self, name: str, dtype: str = "int32"):
        self.name = name
        self.dtype = dt.check(dtype)
        self.uid = next(_ids)

    def __setstate__(self, state):
        # A uid is unique within one process: an unpickled Var (a tensor expression sent to a
        # compiling worker) takes a fresh one, as its old one may name another Var there.
        # One pickle holds one object per Var, so all its uses still agree.
        self.__dict__.update(state)
        self.uid = next(_ids)

    def __repr__(self):
        return self.name


class Const(Expr):
    def __init__(self, value, dtype: str):
        self.dtype = dt.check(dtype)
        if dt.is_float(dtype):
            value = float(value)
        elif dt.is_bool(dtype):
            value = bool(value)
        else:
            value = int(value)
            lo, hi = dt.int_range(dtype)
            if not lo <= value <= hi:
                raise ValueError(f"constant {value} does not fit in {dtype} ([{lo}, {hi}])")
        self.value = value

    def __repr__(self):
        if self.dtype in ("int32", "bool", "float32"):    # the dtypes a bare literal gets
            return repr(self.value)
        return f"{self.dtype}({self.value!r})"


def const(value, dtype: str | None = None) -> Const:
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "float32" if isinstance(value, float) else "int32"
    return Const(value, dtype)


class BinaryOp(Expr):
    _fields = ("a", "b")
    symbol = "?"

    def __init__(self, a: Expr, b: Expr):
        self.a, self.b = a, b
        self.dtype = self.result_dtype(a.dtype)

    def result_dtype(self, t):
        return t

    def __repr__(self):
        return f"({self.a!r} {self.symbol} {self.b!r})"


class Add(BinaryOp): symbol = "+"
class Sub(BinaryOp): symbol = "-"
class Mul(BinaryOp): symbol = "*"
class Div(BinaryOp): symbol = "/"          # true division, floats only
class FloorDiv(BinaryOp): symbol = "//"    # integer division rounding to -inf
class FloorMod(BinaryOp): symbol = "%"     # remainder with the sign of the divisor


class Min(BinaryOp):
    symbol = "min"

    def __repr__(self):
        return f"min({self.a!r}, {self.b!r})"


class Max(BinaryOp):
    symbol = "max"

    def __repr__(self):
        return f"max({self.a!r}, {self.b!r})"


class CmpOp(BinaryOp):
    def result_dtype(self, t):
        return dt.with_lanes("bool", dt.lanes(t))


class LT(CmpOp): symbol = "<"
class LE(CmpOp): symbol = "<="
class GT(CmpOp): symbol = ">"
class GE(CmpOp): symbol = ">="
class EQ(CmpOp): symbol = "=="
class NE(CmpOp): symbol = "!="


class And(BinaryOp): symbol = "&&"
class Or(BinaryOp): symbol = "||"


class Not(Expr):
    _fields = ("a",)

    def __init__(self, a: Expr):
        if not dt.is_bool(a.dtype):
            raise TypeError(f"logical not needs a bool operand, got {a.dtype}: {a!r}")
        self.a, self.dtype = a, a.dtype

    def __repr__(self):
        return f"!{self.a!r}"


class Select(Expr):
    """cond ? t : f. Both branches may be evaluated (no side effects in expressions)."""
    _fields = ("cond", "t", "f")

    def __init__(self, cond: Expr, t: Expr, f: Expr):
        if not dt.is_bool(cond.dtype):
            raise TypeError(f"select condition must be bool, got {cond.dtype}: {cond!r}")
        if t.dtype != f.dtype:
            raise TypeError(f"select branches have different dtypes {t.dtype} and {f.dtype}; "
                            "cast one of them")
        self.cond, self.t, self.f, self.dtype = cond, t, f, t.dtype

    def __repr__(self):
        return f"select({self.cond!r}, {self.t!r}, {self.f!r})"


class Cast(Expr):
    """Conversion. float->int truncates toward zero; int->narrower int wraps (two's
    complement); use topi's saturating helpers where saturation is wanted."""
    _fields = ("value",)

    def __init__(self, dtype: str, value: Expr):
        self.dtype = dt.with_lanes(dtype, dt.lanes(value.dtype))
        self.value = value

    def __repr__(self):
        return f"{self.dtype}({self.value!r})"


class Call(Expr):
    """A pure math intrinsic (exp, log, sqrt, tanh, fabs, floor, round, fma, ...)."""
    _fields = ("args",)
    PURE = {"exp", "log", "sqrt", "tanh", "fabs", "floor", "ceil", "round", "fma", "sigmoid",
            "erf", "pow", "exp_nonpositive"}

    def __init__(self, name: str, args, dtype: str):
        self.name, self.args, self.dtype = name, tuple(args), dtype

    def __repr__(self):
        return f"{self.name}({', '.join(map(repr, self.args))})"


class TensorRead(Expr):
    """A read of a te.Tensor at a multi-dimensional index (before lowering)."""
    _fields = ("indices",)

    def __init__(self, tensor, indices):
        if len(indices) != len(tensor.shape):
            raise IndexError(f"tensor {tensor.name} has {len(tensor.shape)} dimensions but was "
                             f"indexed with {len(indices)} indices")
        self.tensor = tensor
        self.indices = tuple(to_expr(i, "int32") for i in indices)
        self.dtype = tensor.dtype

    def __repr__(self):
        return f"{self.tensor.name}[{', '.join(map(repr, self.indices))}]"


class BufferLoad(Expr):
    """A read of a Buffer in the loop IR: multi-dimensional before flattening, one flat index
    (possibly a vector Ramp) after."""
    _fields = ("indices",)

    def __init__(self, buffer, indices, dtype: str | None = None):
        self.buffer, self.indices = buffer, tuple(indices)
        lanes = max([dt.lanes(i.dtype) for i in self.indices] + [1])
        self.dtype = dtype or dt.with_lanes(buffer.dtype, lanes)

    def __repr__(self):
        return f"{self.buffer.name}[{', '.join(map(repr, self.indices))}]"


class Reduce(Expr):
    """combiner over `axis` (reduce IterVars) of `source`, optionally only where `condition`.
    "fmax" is the largest element that is not NaN (numpy's fmax.reduce; -inf where all are):
    a plain compare per element, where "max" also carries any NaN to the result (three
    instructions a vector on x86 instead of one), for a reduction whose consumer propagates
    a NaN by itself (softmax's exponentials)."""
    _fields = ("source", "condition")
    COMBINERS = ("sum", "max", "min", "fmax")

    def __init__(self, combiner: str, source: Expr, axis, condition: Expr | None = None):
        if combiner not in self.COMBINERS:
            raise ValueError(f"unknown reduction {combiner!r}; expected one of {self.COMBINERS}")
        self.combiner, self.source, self.axis = combiner, source, tuple(axis)
        self.condition = condition
        self.dtype = source.dtype

    def identity(self) -> Const:
        t = self.dtype
        if self.combiner == "sum":
            return Const(0, t)
        if dt.is_float(t):
            return Const(float("-inf") if self.combiner in ("max", "fmax") else float("inf"), t)
        lo, hi = dt.int_range(t)
        return Const(lo if self.combiner in ("max", "fmax") else hi, t)

    def __repr__(self):
        axes = ", ".join(iv.var.name for iv in self.axis)
        cond = f", where={self.condition!r}" if self.condition is not None else ""
        return f"{self.combiner}({self.source!r}, axis=[{axes}]{cond})"


class Ramp(Expr):
    """The vector [base, base+stride, ..., base+(lanes-1)*stride]."""
    _fields = ("base", "stride")

    def __init__(self, base: Expr, stride: Expr, lanes: int):
        self.base, self.stride, self.lanes = base, stride, lanes
        self.dtype = dt.with_lanes(base.dtype, lanes)

    def __repr__(self):
        return f"ramp({self.base!r}, {self.stride!r}, {self.lanes})"


class Broadcast(Expr):
    _fields = ("value",)

    def __init__(self, value: Expr, lanes: int):
        self.value, self.lanes = value, lanes
        self.dtype = dt.with_lanes(value.dtype, lanes)

    def __repr__(self):
        return f"x{self.lanes}({self.value!r})"


# ---------------------------------------------------------------------------------------

def to_expr(x, dtype: str | None = None) -> Expr:
    if isinstance(x, Expr):
        return x
    if hasattr(x, "var") and isinstance(getattr(x, "var"), Var):  # an IterVar
        return x.var
    if isinstance(x, (bool, int, float)) or type(x).__module__ == "numpy":
        if dtype is None:
            dtype = "bool" if isinstance(x, bool) else "float32" if isinstance(x, float) else "int32"
        if dt.is_int(dtype) and isinstance(x, float) and not float(x).is_integer():
            raise TypeError(f"the literal {x} cannot become an {dtype} expression; cast explicitly")
        return Const(x, dt.scalar(dtype)) if dt.lanes(dtype) == 1 else \
            Broadcast(Const(x, dt.scalar(dtype)), dt.lanes(dtype))
    raise TypeError(f"cannot use {type(x).__name__} {x!r} as an expression")


def binary(cls, a, b) -> Expr:
    if hasattr(a, "var") and isinstance(a.var, Var):
        a = a.var
    if hasattr(b, "var") and isinstance(b.var, Var):
        b = b.var
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        a = to_expr(a)
    if not isinstance(a, Expr):
        a = to_expr(a, b.dtype)
    elif not isinstance(b, Expr):
        b = to_expr(b, a.dtype)
    if a.dtype != b.dtype:
        raise TypeError(f"{cls.__name__} of mixed dtypes {a.dtype} and {b.dtype} ({a!r}, {b!r}); "
                        "insert te.cast to make them agree")
    if cls is Div and not dt.is_float(a.dtype):
        raise TypeError(f"'/' is float division but the operands are {a.dtype}; use '//' "
                        "(floor division) for integers")
    if cls in (And, Or) and not dt.is_bool(a.dtype):
        raise TypeError(f"{cls.__name__} needs bool operands, got {a.dtype}")
    return cls(a, b)


def cast(dtype: str, value) -> Expr:
    value = to_expr(value)
    if value.dtype == dt.with_lanes(dtype, dt.lanes(value.dtype)):
        return value
    return Cast(dtype, value)


def min_expr(a, b): return binary(Min, a, b)
def max_expr(a, b): return binary(Max, a, b)


def all_of(*conds) -> Expr:
    out = None
    for c in conds:
        out = c if out is None else binary(And, out, c)
    return out if out is not None else const(True)


def is_const(e, value=None) -> bool:
    return isinstance(e, Const) and (value is None or e.value == value)
