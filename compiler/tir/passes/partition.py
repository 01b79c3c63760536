"""partition_loops: split a serial loop where the bounds checks inside it stop being needed.

A split that does not divide its axis leaves a guard `if outer*f + inner < n` around the
body. For every outer iteration but the last the guard always holds, so the loop is split
into [0, k), where the (later) simplifier proves the guards true and removes them (the body
then vectorizes and needs no branches), and [k, extent), which keeps them. Only guards that
mention the loop variable count; the tail is not partitioned again. A parallel loop is split
the same way when its tail is short, the tail then running serially after the parallel part.

A padded copy selects between a load and the pad value on conditions such as `w >= 1` and
`w < 57`; a concatenation picks its input by conditions such as `c < 64`, `c < 96`. Each holds
on one side of a point of the loop's range and not on the other. A loop whose selects have such
conditions is split at those points: in each part the simplifier folds every select to one
branch, so a pad's middle loads without a mask and its ends store the pad value, and each
input of a concatenation is copied by a loop of its own. A serial loop is split when its body
is one statement of vector lanes (no loops of its own but vectorized ones); a parallel loop
whatever its body, each part staying parallel (the loop that fuses a concatenation's outer
axes); at most MAX_PARTS parts.
"""
from __future__ import annotations

from .. import expr as E
from ..arith import prove
from ..functor import map_children, substitute, visit
from ..stmt import For, ForKind, IfThenElse, seq

PARALLEL_TAIL_SHARE = 8     # a parallel loop is partitioned when its tail is at most 1/8 of it
MAX_PARTS = 64              # a loop split at its selects' points: a concatenation of up to 64 inputs


def conjuncts(c):
    """The operands of a chain of &&."""
    if isinstance(c, E.And):
        return conjuncts(c.a) + conjuncts(c.b)
    return [c]


def _guards_on(body, var):
    """The conjuncts of guard conditions that mention var."""
    from ..functor import uses_var
    conds = []

    def f(n):
        if isinstance(n, IfThenElse):
            conds.extend(c for c in conjuncts(n.cond) if uses_var(c, var))
    visit(body, f)
    return conds


def loop_ranges(body):
    """The constant [first, last] of every loop in `body` with a constant range."""
    out = {}

    def f(n):
        if isinstance(n, For) and isinstance(n.extent, E.Const) and isinstance(n.min, E.Const):
            out[n.var] = (n.min.value, n.min.value + n.extent.value - 1)
    visit(body, f)
    return out


def _clean_prefix(conds, var, ranges, extent):
    """The largest k such that every guard holds whenever var < k (guards are monotone in the
    loop variable for the splits lowering produces; the result is re-proved)."""
    def holds(k):
        r = dict(ranges)
        r[var] = (0, k - 1)
        return all(prove(c, r) is True for c in conds)
    lo, hi = 0, extent
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo if lo == 0 or holds(lo) else 0


def partition_loops(func):
    def rec(s, ranges):
        if isinstance(s, For):
            inner = dict(ranges)
            if isinstance(s.min, E.Const) and isinstance(s.extent, E.Const):
                inner[s.var] = (s.min.value, s.min.value + s.extent.value - 1)
            if (s.kind in (ForKind.SERIAL, ForKind.PARALLEL) and E.is_const(s.min, 0)
                    and isinstance(s.extent, E.Const) and s.extent.value > 1):
                conds = _guards_on(s.body, s.var)
                if conds:
                    body_ranges = {**ranges, **loop_ranges(s.body)}
                    k = _clean_prefix(conds, s.var, body_ranges, s.extent.value)
                    # a parallel loop's tail runs serially after it: only a small one (a GEMM's
                    # last, partial row tile), lest one thread do a large share alone
                    tail_n = s.extent.value - k
                    small = s.kind is ForKind.SERIAL or tail_n * PARALLEL_TAIL_SHARE <= s.extent.value
                    if 0 < k < s.extent.value and small:
                        head = For(s.var, 0, k, s.kind, rec(s.body, {**inner, s.var: (0, k - 1)}), s.annotations)
                        tail_var = E.Var(s.var.name, s.var.dtype)
                        tail = For(tail_var, k, s.extent.value - k, ForKind.SERIAL,
                                   substitute(s.body, {s.var: tail_var}),
                                   s.annotations if s.kind is ForKind.SERIAL else {})
                        return seq(head, tail)
                elif s.kind is ForKind.PARALLEL or _lanes_only(s.body):
                    points = _switch_points(_selects_on(s.body, s.var), s.var,
                                            {**ranges, **loop_ranges(s.body)}, s.extent.value)
                    if points and len(points) < MAX_PARTS:
                        return _split_at(s, points, lambda body, lo, hi: rec(body, {**inner, s.var: (lo, hi)}))
            return map_children(s, lambda c: rec(c, inner))
        if isinstance(s, E.Expr):
            return s
        return map_children(s, lambda c: rec(c, ranges))
    return func.with_body(rec(func.body, {}))


def _lanes_only(body) -> bool:
    """Whether the only loops in `body` are vector lanes."""
    loops = []
    visit(body, lambda n: loops.append(n) if isinstance(n, For) and n.kind is not ForKind.VECTORIZED else None)
    return not loops


def _selects_on(body, var):
    """The conjuncts of select conditions that mention var."""
    from ..functor import uses_var
    conds = []

    def f(n):
        if isinstance(n, E.Select):
            conds.extend(c for c in conjuncts(n.cond) if uses_var(c, var))
    visit(body, f)
    return conds


def _switch_points(conds, var, ranges, extent):
    """The sorted points 0 < p < extent where a condition on var alone switches: false below p
    and true from it on, or the reverse. Where one iteration straddles the point (its vector
    lanes: `i*8 + lane < 197` holds for i < 24, for some lanes of i = 24, for none after), both
    its ends are points: that part keeps the select, the others fold it. Conditions that do not
    decide on var alone (they also depend on other serial variables, or switch more than once)
    are left out."""
    def holds(c, lo, hi):
        return prove(c, {**ranges, var: (lo, hi)})
    points = set()
    for c in conds:
        first, last = holds(c, 0, 0), holds(c, extent - 1, extent - 1)
        if first is None or last is None or first == last:
            continue
        lo, hi = 1, extent - 1      # the least p from which c holds as it does at the end
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if holds(c, mid, extent - 1) is last else (mid + 1, hi)
        if holds(c, lo, extent - 1) is not last:
            continue
        if holds(c, 0, lo - 1) is first:
            points.add(lo)
        elif lo >= 2 and holds(c, 0, lo - 2) is first:     # one iteration straddles the point
            points.update((lo - 1, lo))
    return sorted(points)


def _split_at(s, points, rec):
    """The loop s as its iterations [0, p1), [p1, p2), ..., [pk, extent): the first part keeps
    s's variable, each other part its own; rec(body, lo, hi) rewrites a part's body further."""
    parts = []
    bounds = [0, *points, s.extent.value]
    for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        v = s.var if k == 0 else E.Var(s.var.name, s.var.dtype)
        body = s.body if k == 0 else substitute(s.body, {s.var: v})
        parts.append(For(v, lo, hi - lo, s.kind, rec(body, lo, hi - 1), s.annotations))
    return seq(*parts)
