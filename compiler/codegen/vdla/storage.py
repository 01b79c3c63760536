"""check_storage: the accelerator buffers live at any point fit their SRAMs.

Buffers are stacked per scope in allocation order (emit assigns the same places), each
replicated once per virtual thread it lives in; the first scope that overflows is an error
naming its buffers, so a schedule's tile sizes can be fixed before any instruction exists."""
from __future__ import annotations

from ...tir import stmt as S
from .errors import VdlaLoweringError
from .nodes import scope_lanes, sram_depth


def buffer_elems(config, buf) -> int:
    lanes = scope_lanes(config, buf.scope)
    if buf.size() % lanes:
        raise VdlaLoweringError(f"buffer {buf.name} {list(buf.shape)} in {buf.scope} is not a whole number of "
                                f"{lanes}-lane elements")
    return buf.size() // lanes


def check_storage(config):
    def run(func):
        def walk(stmt, live, copies):
            if isinstance(stmt, S.AttrStmt) and stmt.key == "vdla.replicate":
                copies = dict(copies)
                copies[stmt.node] = stmt.value[1]
            if isinstance(stmt, S.Allocate) and stmt.buffer.scope.startswith("vdla."):
                buf = stmt.buffer
                n = copies.get(buf, 1)
                live = live + [(buf, n)]
                scope = buf.scope
                used = sum(buffer_elems(config, b) * k for b, k in live if b.scope == scope)
                depth = sram_depth(config, scope)
                if used > depth:
                    parts = ", ".join(f"{b.name} {buffer_elems(config, b)}" + (f" x {k} threads" if k > 1 else "")
                                      for b, k in live if b.scope == scope)
                    raise VdlaLoweringError(f"kernel {func.name}: {scope} holds {depth} elements but the live "
                                            f"buffers need {used} ({parts}); use smaller tiles or fewer "
                                            "virtual threads")
            for _, child in stmt.children():
                for c in (child if isinstance(child, tuple) else (child,)):
                    if isinstance(c, S.Stmt):
                        walk(c, live, copies)
        walk(func.body, [], {})
        return func
    run.__name__ = "check_storage"
    return run
