"""Statements and buffers of the loop IR. Each statement states its text form, lines(indent),
beside its definition; repr() joins them (expressions print themselves likewise, expr.py)."""
from __future__ import annotations

import enum
import math

from . import dtype as dt
from .expr import Node, Expr, Var, is_const, to_expr


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
    # a GPU launch dimension (annotations["thread_tag"]: blockIdx.x ... threadIdx.z): the
    # iterations run as the blocks or threads of a kernel launch, not as a loop
    THREAD_BINDING = "thread_binding"
    TENSORIZED = "tensorized"


class Stmt(Node):
    def lines(self, indent=0) -> list[str]:
        return [f"{_pad(indent)}<{type(self).__name__}>"]

    def __repr__(self):
        return "\n".join(self.lines())


def _pad(indent: int) -> str:
    return "  " * indent


def _lines(s, indent) -> list[str]:
    """A body's lines (none where there is no body)."""
    return [] if s is None else s.lines(indent)


class For(Stmt):
    _fields = ("min", "extent", "body")

    def __init__(self, var: Var, min, extent, kind: ForKind, body: Stmt, annotations=None):
        self.var, self.min, self.extent = var, to_expr(min), to_expr(extent)
        self.kind, self.body = kind, body
        self.annotations = dict(annotations or {})

    def lines(self, indent=0):
        kind = "" if self.kind is ForKind.SERIAL else f" # {self.kind.value}"
        lo, n = self.min, self.extent
        rng = f"range({n!r})" if is_const(lo, 0) else f"range({lo!r}, {lo!r} + {n!r})"
        return [f"{_pad(indent)}for {self.var.name} in {rng}:{kind}"] + _lines(self.body, indent + 1)


class SeqStmt(Stmt):
    _fields = ("seq",)

    def __init__(self, seq):
        self.seq = tuple(seq)

    def lines(self, indent=0):
        return [line for s in self.seq for line in _lines(s, indent)]


class IfThenElse(Stmt):
    _fields = ("cond", "then_case", "else_case")

    def __init__(self, cond: Expr, then_case: Stmt, else_case: Stmt | None = None):
        self.cond, self.then_case, self.else_case = cond, then_case, else_case

    def lines(self, indent=0):
        out = [f"{_pad(indent)}if {self.cond!r}:"] + _lines(self.then_case, indent + 1)
        if self.else_case is not None:
            out += [f"{_pad(indent)}else:"] + _lines(self.else_case, indent + 1)
        return out


class BufferStore(Stmt):
    _fields = ("value", "indices")

    def __init__(self, buffer: Buffer, value: Expr, indices):
        self.buffer, self.value, self.indices = buffer, value, tuple(indices)

    def lines(self, indent=0):
        return [f"{_pad(indent)}{self.buffer.name}[{', '.join(map(repr, self.indices))}] = {self.value!r}"]


class Allocate(Stmt):
    """Storage for `buffer` (in its scope) whose lifetime is `body`."""
    _fields = ("body",)

    def __init__(self, buffer: Buffer, body: Stmt):
        self.buffer, self.body = buffer, body

    def lines(self, indent=0):
        b = self.buffer
        return ([f"{_pad(indent)}{b.name} = alloc({list(b.shape)}, {b.dtype}, scope={b.scope!r})"]
                + _lines(self.body, indent))


class Evaluate(Stmt):
    _fields = ("value",)

    def __init__(self, value: Expr):
        self.value = value

    def lines(self, indent=0):
        return [f"{_pad(indent)}{self.value!r}"]


class AttrStmt(Stmt):
    """Annotates `body` with key=value (e.g. "pragma", "tensorize" region markers)."""
    _fields = ("value", "body")

    def __init__(self, key: str, node, value, body: Stmt):
        self.key, self.node, self.value, self.body = key, node, value, body

    def lines(self, indent=0):
        return [f"{_pad(indent)}# attr {self.key} = {self.value!r}"] + _lines(self.body, indent)


class IntrinsicStmt(Stmt):
    """An opaque hardware operation on buffer regions, emitted by tensorize for targets whose
    intrinsic is not expressible as loop IR (e.g. an accelerator GEMM instruction).
    `regions` are (Buffer view) objects; `attrs` are intrinsic parameters."""
    _fields = ()

    def __init__(self, intrin_name: str, regions, attrs=None):
        self.intrin_name, self.regions, self.attrs = intrin_name, tuple(regions), dict(attrs or {})

    def lines(self, indent=0):
        regs = ", ".join(f"{r.name}@{r.scope}" for r in self.regions)
        return [f"{_pad(indent)}{self.intrin_name}({regs}){'' if not self.attrs else ' ' + repr(self.attrs)}"]


class PrimFunc:
    """A kernel: parameters (Buffers, inputs then outputs) and a body."""

    def __init__(self, name: str, params, body: Stmt, attrs=None):
        self.name, self.params, self.body = name, list(params), body
        self.attrs = dict(attrs or {})

    def with_body(self, body):
        return PrimFunc(self.name, self.params, body, self.attrs)

    def __repr__(self):
        params = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in self.params)
        return "\n".join([f"def {self.name}({params}):"] + _lines(self.body, 1))


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
