"""Top-down statement rewriting for the VDLA passes (a pass matches whole loop nests, so
it must see the outermost loop of a nest before its inner loops)."""
from ...tir import stmt as S
from ...tir.functor import map_children


def rewrite(node, fn):
    """fn(stmt) -> replacement or None (then recurse into the statement's children)."""
    def rec(n):
        if isinstance(n, S.Stmt):
            r = fn(n)
            if r is not None:
                return r
            return map_children(n, rec)
        return n
    return rec(node)


def perfect_nest(stmt):
    """(loops [(Var, extent)], innermost statement) of a chain of serial For loops."""
    loops = []
    while isinstance(stmt, S.For) and stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED):
        if not (hasattr(stmt.extent, "value") and hasattr(stmt.min, "value") and stmt.min.value == 0):
            break
        loops.append((stmt.var, int(stmt.extent.value)))
        stmt = stmt.body
    return loops, stmt
