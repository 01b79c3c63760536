"""Statements and buffers of the loop IR."""
from __future__ import annotations

import enum
import math

from . import dtype as dt
from .expr import Node, Expr, Var, to_expr


class Buffer:
    """A named, typed, row-major array living in a memory scope.

    scope "global" is ordinary memory passed in as a kernel argument or allocated on the heap;
    "local" is private to the enclosing loop body (a stack array the backend may promote to
    registers); other scopes name on-chip memories of an accelerator (e.g. "vdla.inp") that
    only that target's backend can address. `elem_offset` and `strides` describe a view into
    a larger buffer (used by tensorize to hand a region to an intrinsic).
    """

    def __init__(self, name, shape, dtype, scope="global", strides=None, elem_offset=0, data=None):
        self.name = name
        self.shape = tuple(int(s) if not isinstance(s, Expr) else s for s in shape)
        self.dtype = dt.check(dtype)
        self.scope = scope
        self.strides = tuple(strides) if strides is not None else None
        self.elem_offset = elem_offset
        self.data = data  # the backing Buffer when this is a view

    def row_major_strides(self):
        out, acc = [], 1
        for s in reversed(self.shape):
            out.append(acc)
            acc = acc * s
        return tuple(reversed(out))

    def get_strides(self):
        return self.strides if self.strides is not None else self.row_major_strides()

    def size(self) -> int:
        return math.prod(int(s) for s in self.shape)

    def __repr__(self):
        return f"Buffer({self.name}, {list(self.shape)}, {self.dtype}, scope={self.scope})"


class ForKind(enum.Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    VTHREAD = "vthread"      # a virtual thread: a hint that iterations are independent streams
    TENSORIZED = "tensorized"


class Stmt(Node):
    pass


class For(Stmt):
    _fields = ("min", "extent", "body")

    def __init__(self, var: Var, min, extent, kind: ForKind, body: Stmt, annotations=None):
        self.var, self.min, self.extent = var, to_expr(min), to_expr(extent)
        self.kind, self.body = kind, body
        self.annotations = dict(annotations or {})


class SeqStmt(Stmt):
    _fields = ("seq",)

    def __init__(self, seq):
        self.seq = tuple(seq)


class IfThenElse(Stmt):
    _fields = ("cond", "then_case", "else_case")

    def __init__(self, cond: Expr, then_case: Stmt, else_case: Stmt | None = None):
        self.cond, self.then_case, self.else_case = cond, then_case, else_case


class BufferStore(Stmt):
    _fields = ("value", "indices")

    def __init__(self, buffer: Buffer, value: Expr, indices):
        self.buffer, self.value, self.indices = buffer, value, tuple(indices)


class Allocate(Stmt):
    """Storage for `buffer` (in its scope) whose lifetime is `body`."""
    _fields = ("body",)

    def __init__(self, buffer: Buffer, body: Stmt):
        self.buffer, self.body = buffer, body


class Evaluate(Stmt):
    _fields = ("value",)

    def __init__(self, value: Expr):
        self.value = value


class AttrStmt(Stmt):
    """Annotates `body` with key=value (e.g. "pragma", "tensorize" region markers)."""
    _fields = ("value", "body")

    def __init__(self, key: str, node, value, body: Stmt):
        self.key, self.node, self.value, self.body = key, node, value, body


class IntrinsicStmt(Stmt):
    """An opaque hardware operation on buffer regions, emitted by tensorize for targets whose
    intrinsic is not expressible as loop IR (e.g. an accelerator GEMM instruction).
    `regions` are (Buffer view) objects; `attrs` are intrinsic parameters."""
    _fields = ()

    def __init__(self, intrin_name: str, regions, attrs=None):
        self.intrin_name, self.regions, self.attrs = intrin_name, tuple(regions), dict(attrs or {})


class PrimFunc:
    """A kernel: parameters (Buffers, inputs then outputs) and a body."""

    def __init__(self, name: str, params, body: Stmt, attrs=None):
        self.name, self.params, self.body = name, list(params), body
        self.attrs = dict(attrs or {})

    def with_body(self, body):
        return PrimFunc(self.name, self.params, body, self.attrs)

    def __repr__(self):
        from .printer import to_text
        return to_text(self)


def seq(*stmts) -> Stmt:
    flat = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(flat)


def no_op() -> Stmt:
    return SeqStmt([])


def is_no_op(s) -> bool:
    return s is None or (isinstance(s, SeqStmt) and not s.seq)
