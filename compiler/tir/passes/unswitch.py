"""unswitch_loops: give a register tile's computation a copy without the bounds selects that
only the borders of the loops around it need.

A depthwise convolution reads its padded input through selects such as
`select(oh + ry >= 1 && oh + ry < 113 && ow >= 1, x[.., oh + ry - 1, ow - 1, ..], 0)` inside its
loop over kernel rows ry: every vector load becomes a masked one, in every tile of every row.
partition_loops cannot split these away: the test depends on the inner ry as well as on the
row, and in a parallel loop over fused axes the row is `i % 112`, which no split point
separates. Here each test is made to hold for every value of the loops inside the tile (`ry +
oh >= 1` for ry in [0, 2] is `oh >= 1`), which leaves a condition on the loops outside it, and
the tile (its accumulators' allocation: their initialization, the reduction, the epilogue)
becomes

    if <those conditions>: <the tile with the tests dropped>   (plain loads)
    else: <the tile as it was>                                  (border rows and tiles)

At the tile, not around the reduction loop alone: a branch there keeps the accumulators live
across both paths, and LLVM then spills them (a 112x112 depthwise conv gained 3% instead of
12%); not around the whole row either, whose copies would multiply with each tiled loop. All
the tests of the loops around go into one condition, groups of tests on the same outer
variables (a row's, a tile's) taken as long as the condition holds for at least
MIN_INTERIOR_SHARE of the outer iterations (sampled): less would not pay for the code. Runs
after partition_loops: tests that a split decides are folded by then (their parts' ranges
prove them), and only the ones it could not split remain.
"""
from __future__ import annotations

import itertools
import math
import random

from .. import expr as E
from ..arith import evaluate, relax, simplify, skey
from ..functor import free_vars, map_children, transform, visit
from ..stmt import Allocate, For, IfThenElse
from .partition import conjuncts, loop_ranges

MIN_INTERIOR_SHARE = 0.5
SAMPLES = 512       # points of the outer variables' ranges the share is evaluated at


def _for_all(c, inner: dict):
    """A condition on the variables outside `inner` under which the integer comparison c holds
    for every value of the inner variables (their ranges), or None when c is not such a
    comparison."""
    if not isinstance(c, (E.GE, E.GT, E.LE, E.LT)) or not E.dt.is_int(c.a.dtype):
        return None
    dom = {v: (E.Const(lo, v.dtype), E.Const(hi, v.dtype)) for v, (lo, hi) in inner.items()}
    lo, hi = relax(simplify(E.Sub(c.a, c.b)), dom)
    zero = E.Const(0, c.a.dtype)
    if isinstance(c, (E.GE, E.GT)):        # a - b >= 0 everywhere: at its least
        return type(c)(lo, zero)
    return type(c)(hi, zero)               # a - b <= 0 everywhere: at its most


def _arithmetic(e) -> bool:
    """Whether e is arithmetic on variables and constants only (arith.evaluate's): a condition
    hoisted out of the loop must not read memory the loop may write."""
    ok = []
    visit(e, lambda n: ok.append(isinstance(n, (E.Var, E.Const, E.Not, E.BinaryOp))))
    return all(ok)


def _share(cond, ranges: dict) -> float:
    """The share of the outer variables' values at which cond holds: over all of them, or
    SAMPLES drawn at random (a fixed seed: the same kernel each compile). Not a strided grid:
    a fused row variable tested through `i % 14` aliases with the stride (a 14x14 image's
    interior measured 0.33 or 0.55 by two grids; it is 0.57)."""
    names = sorted(free_vars(cond), key=lambda v: v.uid)
    axes = [range(ranges[v][0], ranges[v][1] + 1) for v in names]
    if math.prod(len(a) for a in axes) <= SAMPLES:
        points = list(itertools.product(*axes))
    else:
        pick = random.Random(0)
        points = [tuple(pick.choice(a) for a in axes) for _ in range(SAMPLES)]
    return sum(bool(evaluate(cond, dict(zip(names, p)))) for p in points) / len(points)


def _interior(tile, ranges):
    """(condition, tests) for unswitching `tile`: the select tests in it that hold for every
    value of its loops where the condition (on the loops around it) does; None when there is
    nothing to gain. `ranges`: the outer loops' variables.

    Tests are taken by the outer variables they depend on (a row's, a tile's), the groups that
    hold most often first, while the condition of all taken holds often enough: a 12-pixel
    row of two tiles has no tile without a border column, and its interior rows still get a
    copy that tests no row bound."""
    inner = loop_ranges(tile)
    groups, seen = {}, set()

    def f(n):
        if isinstance(n, (E.Select, IfThenElse)):
            for c in conjuncts(n.cond):
                key = skey(c)
                if key in seen:
                    continue
                seen.add(key)
                q = _for_all(c, inner)
                if q is None or not free_vars(q) <= set(ranges) or not _arithmetic(q):
                    continue
                q = simplify(q, ranges)
                if isinstance(q, E.Const):     # always holds (the simplifier folds it) or never
                    continue
                groups.setdefault(frozenset(free_vars(q)), []).append((key, q))
    visit(tile.body, f)
    ranked = sorted(groups.values(), key=lambda g: -_share(E.all_of(*(q for _, q in g)), ranges))
    taken = []
    for group in ranked:
        if _share(E.all_of(*(q for _, q in taken + group)), ranges) < MIN_INTERIOR_SHARE:
            break
        taken += group
    if not taken:
        return None
    return E.all_of(*(q for _, q in taken)), {key for key, _ in taken}


def _without(body, tests: set):
    """`body` with the conjuncts in `tests` (structural keys) dropped from its selects and
    guards."""
    def post(n):
        if not isinstance(n, (E.Select, IfThenElse)):
            return None
        rest = [c for c in conjuncts(n.cond) if skey(c) not in tests]
        if len(rest) == len(conjuncts(n.cond)):
            return None
        if isinstance(n, IfThenElse):
            return IfThenElse(E.all_of(*rest), n.then_case, n.else_case) if rest else n.then_case
        return E.Select(E.all_of(*rest), n.t, n.f) if rest else n.t
    return transform(body, post)


def unswitch_loops(func):
    def rec(s, ranges):
        if isinstance(s, Allocate) and s.buffer.scope == "local":
            found = _interior(s, ranges)
            if found is None:
                return s
            cond, tests = found
            return IfThenElse(cond, Allocate(s.buffer, _without(s.body, tests)), s)
        if isinstance(s, For) and isinstance(s.min, E.Const) and isinstance(s.extent, E.Const):
            inner = {**ranges, s.var: (s.min.value, s.min.value + s.extent.value - 1)}
            return map_children(s, lambda c: rec(c, inner))
        if isinstance(s, E.Expr):
            return s
        return map_children(s, lambda c: rec(c, ranges))
    return func.with_body(rec(func.body, {}))
