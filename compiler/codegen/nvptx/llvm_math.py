"""math.py's formulas as LLVM IR for NVPTX: values that build instructions when combined.

exp2/log2 are the approximate instructions (llvm.nvvm.ex2.approx.f, .lg2.approx.f); min and max
compare unordered, so a NaN operand comes out as NaN as in numpy."""
from __future__ import annotations

from llvmlite import ir

F32 = ir.FloatType()


class Value:
    def __init__(self, m, v):
        self.m, self.v = m, v

    def _other(self, o):
        return o.v if isinstance(o, Value) else ir.Constant(F32, o)

    def __add__(self, o): return Value(self.m, self.m.b.fadd(self.v, self._other(o)))
    def __sub__(self, o): return Value(self.m, self.m.b.fsub(self.v, self._other(o)))
    def __mul__(self, o): return Value(self.m, self.m.b.fmul(self.v, self._other(o)))
    def __truediv__(self, o): return Value(self.m, self.m.b.fdiv(self.v, self._other(o)))
    def __lt__(self, o): return Value(self.m, self.m.b.fcmp_ordered("<", self.v, self._other(o)))
    def __eq__(self, o): return Value(self.m, self.m.b.fcmp_ordered("==", self.v, self._other(o)))
    def __ne__(self, o): return Value(self.m, self.m.b.fcmp_unordered("!=", self.v, self._other(o)))
    def __and__(self, o): return Value(self.m, self.m.b.and_(self.v, o.v))
    def __invert__(self): return Value(self.m, self.m.b.not_(self.v))
    __hash__ = object.__hash__


class LLVMMath:
    def __init__(self, b, intrinsic):
        self.b = b
        self._intrinsic = intrinsic     # name -> ir.Function of type float(float)

    def c(self, v):
        return Value(self, ir.Constant(F32, float(v)))

    def value(self, v):
        return Value(self, v)

    def select(self, cond, t, f):
        return Value(self, self.b.select(cond.v, t.v, f.v))

    def _unary(self, name, x):
        return Value(self, self.b.call(self._intrinsic(name), [x.v]))

    def fabs(self, x): return self._unary("llvm.fabs.f32", x)
    def floor(self, x): return self._unary("llvm.floor.f32", x)
    def round(self, x): return self._unary("llvm.roundeven.f32", x)
    def exp2(self, x): return self._unary("llvm.nvvm.ex2.approx.f", x)
    def log2(self, x): return self._unary("llvm.nvvm.lg2.approx.f", x)

    def min(self, a, b):
        return Value(self, self.b.select(self.b.fcmp_unordered("<", a.v, b.v), a.v, b.v))

    def max(self, a, b):
        return Value(self, self.b.select(self.b.fcmp_unordered(">", a.v, b.v), a.v, b.v))
