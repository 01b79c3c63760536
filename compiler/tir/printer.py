"""A readable text form of expressions, statements and kernels (Python-like)."""
from __future__ import annotations

from . import expr as E
from . import stmt as S


def expr_text(e) -> str:
    if isinstance(e, E.Var):
        return e.name
    if isinstance(e, E.Const):
        if e.dtype in ("int32", "bool", "float32"):
            return repr(e.value)
        return f"{e.dtype}({e.value!r})"
    if isinstance(e, (E.Min, E.Max)):
        return f"{e.symbol}({expr_text(e.a)}, {expr_text(e.b)})"
    if isinstance(e, E.BinaryOp):
        return f"({expr_text(e.a)} {e.symbol} {expr_text(e.b)})"
    if isinstance(e, E.Not):
        return f"!{expr_text(e.a)}"
    if isinstance(e, E.Select):
        return f"select({expr_text(e.cond)}, {expr_text(e.t)}, {expr_text(e.f)})"
    if isinstance(e, E.Cast):
        return f"{e.dtype}({expr_text(e.value)})"
    if isinstance(e, E.Call):
        return f"{e.name}({', '.join(expr_text(a) for a in e.args)})"
    if isinstance(e, E.TensorRead):
        return f"{e.tensor.name}[{', '.join(expr_text(i) for i in e.indices)}]"
    if isinstance(e, E.BufferLoad):
        return f"{e.buffer.name}[{', '.join(expr_text(i) for i in e.indices)}]"
    if isinstance(e, E.Reduce):
        axes = ", ".join(iv.var.name for iv in e.axis)
        cond = f", where={expr_text(e.condition)}" if e.condition is not None else ""
        return f"{e.combiner}({expr_text(e.source)}, axis=[{axes}]{cond})"
    if isinstance(e, E.Ramp):
        return f"ramp({expr_text(e.base)}, {expr_text(e.stride)}, {e.lanes})"
    if isinstance(e, E.Broadcast):
        return f"x{e.lanes}({expr_text(e.value)})"
    return f"<{type(e).__name__}>"


def stmt_lines(s, indent=0) -> list[str]:
    pad = "  " * indent
    if s is None:
        return []
    if isinstance(s, S.SeqStmt):
        out = []
        for c in s.seq:
            out += stmt_lines(c, indent)
        return out
    if isinstance(s, S.For):
        kind = "" if s.kind is S.ForKind.SERIAL else f" # {s.kind.value}"
        rng = (f"range({expr_text(s.extent)})" if E.is_const(s.min, 0)
               else f"range({expr_text(s.min)}, {expr_text(s.min)} + {expr_text(s.extent)})")
        return [f"{pad}for {s.var.name} in {rng}:{kind}"] + stmt_lines(s.body, indent + 1)
    if isinstance(s, S.IfThenElse):
        out = [f"{pad}if {expr_text(s.cond)}:"] + stmt_lines(s.then_case, indent + 1)
        if s.else_case is not None:
            out += [f"{pad}else:"] + stmt_lines(s.else_case, indent + 1)
        return out
    if isinstance(s, S.BufferStore):
        idx = ", ".join(expr_text(i) for i in s.indices)
        return [f"{pad}{s.buffer.name}[{idx}] = {expr_text(s.value)}"]
    if isinstance(s, S.Allocate):
        b = s.buffer
        return ([f"{pad}{b.name} = alloc({list(b.shape)}, {b.dtype}, scope={b.scope!r})"]
                + stmt_lines(s.body, indent))
    if isinstance(s, S.Evaluate):
        return [f"{pad}{expr_text(s.value)}"]
    if isinstance(s, S.AttrStmt):
        return [f"{pad}# attr {s.key} = {s.value!r}"] + stmt_lines(s.body, indent)
    if isinstance(s, S.IntrinsicStmt):
        regs = ", ".join(f"{r.name}@{r.scope}" for r in s.regions)
        return [f"{pad}{s.intrin_name}({regs}){'' if not s.attrs else ' ' + repr(s.attrs)}"]
    return [f"{pad}<{type(s).__name__}>"]


def to_text(node) -> str:
    if isinstance(node, S.PrimFunc):
        params = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in node.params)
        return "\n".join([f"def {node.name}({params}):"] + stmt_lines(node.body, 1))
    if isinstance(node, S.Stmt):
        return "\n".join(stmt_lines(node))
    return expr_text(node)
