"""Tensors and the operations that define them."""
from __future__ import annotations

from ..tir.expr import Var, TensorRead


class IterVar:
    """An iteration axis: a variable over [dom_min, dom_min + extent).

    kind is "data" for the axes of a compute's output, "reduce" for reduction axes, and
    "split"/"fuse" for the axes a schedule creates.
    """

    def __init__(self, extent, name, kind="data", dom_min=0):
        self.var = Var(name)
        self.extent = int(extent)
        self.dom_min = int(dom_min)
        self.kind = kind
        if self.extent <= 0:
            raise ValueError(f"axis {name} has non-positive extent {extent}")

    @property
    def name(self):
        return self.var.name

    def __repr__(self):
        return f"IterVar({self.name}, [{self.dom_min}, {self.dom_min + self.extent}), {self.kind})"

    # Let an IterVar be used directly inside index arithmetic.
    def _e(self): return self.var
    def __add__(self, o): return self.var + o
    def __radd__(self, o): return o + self.var
    def __sub__(self, o): return self.var - o
    def __rsub__(self, o): return o - self.var
    def __mul__(self, o): return self.var * o
    def __rmul__(self, o): return o * self.var
    def __floordiv__(self, o): return self.var // o
    def __mod__(self, o): return self.var % o
    def __lt__(self, o): return self.var < o
    def __le__(self, o): return self.var <= o
    def __gt__(self, o): return self.var > o
    def __ge__(self, o): return self.var >= o
    __hash__ = object.__hash__


class Operation:
    name: str
    tag: str = ""

    @property
    def input_tensors(self) -> list:
        return []


class PlaceholderOp(Operation):
    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, shape, dtype
        self.tag = "placeholder"


class ComputeOp(Operation):
    """out[axis...] = body, where body may be a Reduce over reduce_axis."""

    def __init__(self, name, axis, body, tag="", attrs=None):
        self.name, self.axis, self.body, self.tag = name, list(axis), body, tag
        self.attrs = dict(attrs or {})
        from ..tir.expr import Reduce
        self.reduce_axis = list(body.axis) if isinstance(body, Reduce) else []
        self.shape = tuple(iv.extent for iv in self.axis)
        self.dtype = body.dtype

    @property
    def input_tensors(self):
        from ..tir.functor import visit
        seen = []
        def f(n):
            if isinstance(n, TensorRead) and all(n.tensor is not t for t in seen):
                seen.append(n.tensor)
        visit(self.body, f)
        return seen


class Tensor:
    """The output of an operation: a static shape, a dtype, and the op that computes it."""

    def __init__(self, op: Operation):
        self.op = op
        self.shape = tuple(op.shape)
        self.dtype = op.dtype

    @property
    def name(self):
        return self.op.name

    @property
    def ndim(self):
        return len(self.shape)

    def __call__(self, *indices):
        return TensorRead(self, indices)

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        return TensorRead(self, indices)

    def __repr__(self):
        return f"Tensor({self.name}, {list(self.shape)}, {self.dtype})"

    __hash__ = object.__hash__
