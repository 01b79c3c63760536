"""verify: well-formedness of a PrimFunc, checked between passes in tests.

Checks: every variable is defined by an enclosing loop; every buffer is a parameter or
allocated around its use; loop extents are positive; operand dtypes agree; stores match their
buffer's element type and lane count; no te-level nodes (TensorRead, Reduce) survive
lowering; after flatten_buffers, accesses have exactly one index.
"""
from __future__ import annotations

from vdla.hw.errors import CompileError

from . import dtype as dt
from . import expr as E
from . import stmt as S


class IRError(CompileError):
    pass


def verify(func: S.PrimFunc, stage: str = "?"):
    flat = func.attrs.get("flattened", False)
    errors = []

    def err(msg):
        errors.append(f"[after {stage}] {func.name}: {msg}")

    def check_expr(e, scope_vars, bufs):
        if isinstance(e, E.Var):
            if e not in scope_vars:
                err(f"variable {e.name} used outside any loop defining it")
            return
        if isinstance(e, (E.TensorRead, E.Reduce)):
            err(f"te node {type(e).__name__} left in loop IR: {e!r}")
            return
        if isinstance(e, E.BinaryOp):
            if e.a.dtype != e.b.dtype:
                err(f"{type(e).__name__} operands have dtypes {e.a.dtype} and {e.b.dtype}: {e!r}")
        if isinstance(e, E.BufferLoad):
            if e.buffer not in bufs:
                err(f"load from {e.buffer.name}, which is neither a parameter nor allocated here")
            _check_access(e.buffer, e.indices, flat, err)
        for _, c in e.children():
            for x in (c if isinstance(c, tuple) else (c,)):
                if isinstance(x, E.Expr):
                    check_expr(x, scope_vars, bufs)

    def check(s, scope_vars, bufs):
        if s is None:
            return
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                check(c, scope_vars, bufs)
        elif isinstance(s, S.For):
            check_expr(s.min, scope_vars, bufs)
            check_expr(s.extent, scope_vars, bufs)
            if isinstance(s.extent, E.Const) and s.extent.value <= 0:
                err(f"loop {s.var.name} has non-positive extent {s.extent.value}")
            if s.var in scope_vars:
                err(f"loop variable {s.var.name} is defined twice")
            check(s.body, scope_vars | {s.var}, bufs)
        elif isinstance(s, S.IfThenElse):
            check_expr(s.cond, scope_vars, bufs)
            if not dt.is_bool(s.cond.dtype):
                err(f"if condition is {s.cond.dtype}, not bool")
            check(s.then_case, scope_vars, bufs)
            check(s.else_case, scope_vars, bufs)
        elif isinstance(s, S.BufferStore):
            if s.buffer not in bufs:
                err(f"store to {s.buffer.name}, which is neither a parameter nor allocated here")
            check_expr(s.value, scope_vars, bufs)
            for i in s.indices:
                check_expr(i, scope_vars, bufs)
            _check_access(s.buffer, s.indices, flat, err)
            if dt.scalar(s.value.dtype) != s.buffer.dtype:
                err(f"store of {s.value.dtype} into {s.buffer.dtype} buffer {s.buffer.name}")
            lanes = max([dt.lanes(i.dtype) for i in s.indices] + [1])
            if dt.lanes(s.value.dtype) != lanes:
                err(f"store to {s.buffer.name}: value has {dt.lanes(s.value.dtype)} lanes, index {lanes}")
        elif isinstance(s, S.Allocate):
            check(s.body, scope_vars, bufs | {s.buffer})
        elif isinstance(s, S.Evaluate):
            check_expr(s.value, scope_vars, bufs)
        elif isinstance(s, S.AttrStmt):
            check(s.body, scope_vars, bufs)
        elif isinstance(s, S.IntrinsicStmt):
            for r in s.regions:
                base = r.data if r.data is not None else r
                if base not in bufs:
                    err(f"intrinsic {s.intrin_name} uses {base.name}, which is not in scope")
        else:
            err(f"unknown statement {type(s).__name__}")

    check(func.body, frozenset(), frozenset(func.params))
    if errors:
        raise IRError("\n".join(errors))
    return func


def _check_access(buf, indices, flat, err):
    if flat:
        if len(indices) != 1:
            err(f"access to {buf.name} has {len(indices)} indices after flattening")
    elif len(indices) != len(buf.shape) and not (len(indices) == 1):
        err(f"access to {buf.name} has {len(indices)} indices but the buffer has "
            f"{len(buf.shape)} dimensions")
    for i in indices:
        if not dt.is_int(i.dtype):
            err(f"index {i!r} into {buf.name} is {i.dtype}, not an integer")
