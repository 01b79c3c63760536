"""Integer arithmetic analysis and the expression simplifier.

- `bounds(e, ranges)`: constant [lo, hi] of an integer expression given constant ranges of
  its variables (None where unbounded).
- `simplify(e, ranges)`: constant folding plus canonical linear forms, so that index
  arithmetic produced by split/fuse (`(xo*8 + xi) // 8`, `... % 8`) reduces to the variables
  it came from and guards that always hold disappear.
- `relax(e, dom)`: symbolic [lo, hi] of `e` when the variables in `dom` range over their
  (symbolic) intervals and every other variable is held fixed; used by bound inference.
"""
from __future__ import annotations

from . import dtype as dt
from . import expr as E
from .functor import map_children

INF = float("inf")


# --- structural keys (for collecting like terms) ----------------------------------------

def skey(e):
    if isinstance(e, E.Var):
        return ("v", e.uid)
    if isinstance(e, E.Const):
        return ("c", e.dtype, e.value)
    parts = [type(e).__name__, e.dtype]
    for name, c in e.children():
        if isinstance(c, tuple):
            parts.append(tuple(skey(x) if isinstance(x, E.Node) else x for x in c))
        elif isinstance(c, E.Node):
            parts.append(skey(c))
        else:
            parts.append(c)
    if isinstance(e, (E.BufferLoad,)):
        parts.append(id(e.buffer))
    if isinstance(e, E.TensorRead):
        parts.append(id(e.tensor))
    if isinstance(e, E.Call):
        parts.append(e.name)
    if isinstance(e, (E.Ramp, E.Broadcast)):
        parts.append(e.lanes)
    return tuple(parts)


def structural_equal(a, b) -> bool:
    return skey(a) == skey(b)


# --- linear forms ----------------------------------------------------------------------

def _is_scalar_int(e):
    return dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1


def linear(e):
    """e == sum(coeff * atom) + const, as ({key: [atom, coeff]}, const); the caller reads it and
    does not change it. A sum's form is kept on its node (`_linear`; map_children drops it from a
    rebuilt copy): the simplifier asks each parent for its children's forms again, which without
    the cache walks a long sum once per level."""
    if isinstance(e, E.Const):
        return {}, e.value
    form = e.__dict__.get("_linear")
    if form is None:
        form = _linear(e)
        if isinstance(e, (E.Add, E.Sub, E.Mul)):
            e._linear = form
    return form


def _linear(e):
    if isinstance(e, (E.Add, E.Sub)):
        ta, ca = linear(e.a)
        tb, cb = linear(e.b)
        sign = 1 if isinstance(e, E.Add) else -1
        out = {k: [a, c] for k, (a, c) in ta.items()}
        for k, (a, c) in tb.items():
            if k in out:
                out[k][1] += sign * c
            else:
                out[k] = [a, sign * c]
        return {k: v for k, v in out.items() if v[1] != 0}, ca + sign * cb
    if isinstance(e, E.Mul):
        if isinstance(e.b, E.Const) or isinstance(e.a, E.Const):
            k, other = (e.b.value, e.a) if isinstance(e.b, E.Const) else (e.a.value, e.b)
            t, c = linear(other)
            if k == 0:
                return {}, 0
            return {key: [a, co * k] for key, (a, co) in t.items()}, c * k
    return {skey(e): [e, 1]}, 0


def from_linear(terms, const, dtype="int32") -> E.Expr:
    out = None
    items = sorted(terms.values(), key=lambda ac: (not isinstance(ac[0], E.Var),
                                                   getattr(ac[0], "uid", 0)))
    # Put positive terms first so the printed form reads naturally.
    items.sort(key=lambda ac: ac[1] < 0)
    for atom, coeff in items:
        if coeff == 0:
            continue
        term = atom if abs(coeff) == 1 else E.Mul(atom, E.Const(abs(coeff), dtype))
        if out is None:
            out = term if coeff > 0 else E.Sub(E.Const(0, dtype), term)
        else:
            out = E.Add(out, term) if coeff > 0 else E.Sub(out, term)
    if out is None:
        return E.Const(const, dtype)
    if const > 0:
        out = E.Add(out, E.Const(const, dtype))
    elif const < 0:
        out = E.Sub(out, E.Const(-const, dtype))
    if all(out is not atom for atom, _ in items):       # a node built here: its form is known
        out._linear = ({k: ac for k, ac in terms.items() if ac[1] != 0}, const)
    return out


# --- constant bounds -------------------------------------------------------------------

def _fdiv(a, b):
    if a in (INF, -INF):
        return a if b > 0 else -a
    return a // b


def bounds(e, ranges=None):
    """(lo, hi) inclusive integer bounds of e; lo/hi may be -inf/inf."""
    ranges = ranges or {}
    if isinstance(e, E.Const):
        v = int(e.value)
        return v, v
    if isinstance(e, E.Var):
        return ranges.get(e, (-INF, INF))
    if isinstance(e, E.Add):
        a, b = bounds(e.a, ranges), bounds(e.b, ranges)
        return a[0] + b[0], a[1] + b[1]
    if isinstance(e, E.Sub):
        a, b = bounds(e.a, ranges), bounds(e.b, ranges)
        return a[0] - b[1], a[1] - b[0]
    if isinstance(e, E.Mul):
        a, b = bounds(e.a, ranges), bounds(e.b, ranges)
        cands = []
        for x in a:
            for y in b:
                if (x in (INF, -INF) and y == 0) or (y in (INF, -INF) and x == 0):
                    cands.append(0)
                else:
                    cands.append(x * y)
        return min(cands), max(cands)
    if isinstance(e, E.FloorDiv) and isinstance(e.b, E.Const) and e.b.value > 0:
        lo, hi = bounds(e.a, ranges)
        return _fdiv(lo, e.b.value), _fdiv(hi, e.b.value)
    if isinstance(e, E.FloorMod) and isinstance(e.b, E.Const) and e.b.value > 0:
        lo, hi = bounds(e.a, ranges)
        c = e.b.value
        if lo >= 0 and hi < c:
            return lo, hi
        if lo != -INF and hi != INF and _fdiv(lo, c) == _fdiv(hi, c):
            return lo % c, hi % c
        return 0, c - 1
    if isinstance(e, (E.Min, E.Max)):
        a, b = bounds(e.a, ranges), bounds(e.b, ranges)
        f = min if isinstance(e, E.Min) else max
        return f(a[0], b[0]), f(a[1], b[1])
    if isinstance(e, E.Select):
        a, b = bounds(e.t, ranges), bounds(e.f, ranges)
        return min(a[0], b[0]), max(a[1], b[1])
    if isinstance(e, E.Cast) and dt.is_int(e.dtype) and dt.is_int(e.value.dtype):
        lo, hi = bounds(e.value, ranges)
        tlo, thi = dt.int_range(e.dtype)
        if tlo <= lo and hi <= thi:
            return lo, hi
        return tlo, thi
    if dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1:
        return dt.int_range(e.dtype)
    return -INF, INF


def prove(cond, ranges=None):
    """True/False if the bool expression is decided by the variable ranges, else None."""
    s = simplify(cond, ranges)
    if isinstance(s, E.Const):
        return bool(s.value)
    return None


# --- simplifier ------------------------------------------------------------------------

_FOLD = {
    E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
    E.Min: min, E.Max: max,
    E.LT: lambda a, b: a < b, E.LE: lambda a, b: a <= b, E.GT: lambda a, b: a > b,
    E.GE: lambda a, b: a >= b, E.EQ: lambda a, b: a == b, E.NE: lambda a, b: a != b,
    E.And: lambda a, b: a and b, E.Or: lambda a, b: a or b,
}


def _fold(e):
    a, b = e.a.value, e.b.value
    t = e.dtype
    if isinstance(e, E.Div):
        return E.Const(a / b, t) if b != 0 else None
    if isinstance(e, (E.FloorDiv, E.FloorMod)):
        if b == 0:
            return None
        if dt.is_float(t):
            import math
            return E.Const(math.floor(a / b) if isinstance(e, E.FloorDiv) else a - math.floor(a / b) * b, t)
        return E.Const(a // b if isinstance(e, E.FloorDiv) else a % b, t)
    v = _FOLD[type(e)](a, b)
    if dt.is_int(t):
        lo, hi = dt.int_range(t)
        if not lo <= v <= hi:   # wrap like the machine would
            span = hi - lo + 1
            v = (v - lo) % span + lo
    return E.Const(v, t)


def evaluate(e, env: dict):
    """The value of integer/boolean arithmetic e with its variables bound by env (Var -> value):
    the folding of constants that simplify does (_FOLD), without building nodes, fast enough to
    test a condition at hundreds of points."""
    if isinstance(e, E.Const):
        return e.value
    if isinstance(e, E.Var):
        return env[e]
    if isinstance(e, E.Not):
        return not evaluate(e.a, env)
    if isinstance(e, E.FloorDiv):
        return evaluate(e.a, env) // evaluate(e.b, env)
    if isinstance(e, E.FloorMod):
        return evaluate(e.a, env) % evaluate(e.b, env)
    if type(e) in _FOLD:
        return _FOLD[type(e)](evaluate(e.a, env), evaluate(e.b, env))
    raise ValueError(f"evaluate: {e!r} is not integer arithmetic on variables and constants")


def _simplify_div_mod(e, ranges):
    c = e.b.value
    if c == 1:
        return e.a if isinstance(e, E.FloorDiv) else E.Const(0, e.dtype)
    terms, k = linear(e.a)
    q_terms, r_terms = {}, {}
    for key, (atom, coeff) in terms.items():
        if coeff % c == 0:
            q_terms[key] = [atom, coeff // c]
        else:
            r_terms[key] = [atom, coeff]
    q_const, r_const = k // c, k % c
    rest = from_linear(r_terms, r_const, e.dtype)
    lo, hi = bounds(rest, ranges)
    if isinstance(e, E.FloorDiv):
        if 0 <= lo and hi < c:
            rdiv = None
        elif lo != -INF and hi != INF and _fdiv(lo, c) == _fdiv(hi, c):
            q_const += int(_fdiv(lo, c))
            rdiv = None
        else:
            # (x // a) // b == x // (a*b) for positive a, b; the multiples of c beside it
            # (q_terms, q_const) still add their quotient below
            if r_const == 0 and isinstance(rest, E.FloorDiv) and isinstance(rest.b, E.Const) and rest.b.value > 0:
                rdiv = E.FloorDiv(rest.a, E.Const(rest.b.value * c, e.dtype))
            else:
                rdiv = E.FloorDiv(rest, e.b)
        if not q_terms and rdiv is not None and q_const == 0:
            return rdiv
        out = from_linear(q_terms, q_const, e.dtype)
        return out if rdiv is None else simplify_node(E.Add(out, rdiv), ranges)
    # FloorMod
    if 0 <= lo and hi < c:
        return rest
    if lo != -INF and hi != INF and _fdiv(lo, c) == _fdiv(hi, c):
        return simplify_node(E.Sub(rest, E.Const(int(_fdiv(lo, c)) * c, e.dtype)), ranges)
    if isinstance(rest, E.FloorMod) and isinstance(rest.b, E.Const) and rest.b.value % c == 0:
        return E.FloorMod(rest.a, e.b)
    return E.FloorMod(rest, e.b)


def simplify_node(e, ranges):
    """Simplify one node whose children are already simplified."""
    if isinstance(e, E.BinaryOp):
        a, b = e.a, e.b
        if isinstance(a, E.Const) and isinstance(b, E.Const) and dt.lanes(e.dtype) == 1:
            r = _fold(e)
            if r is not None:
                return r
        if _is_scalar_int(a):
            if isinstance(e, (E.Add, E.Sub, E.Mul)):
                terms, k = linear(e)
                return from_linear(terms, k, e.dtype)
            if isinstance(e, (E.FloorDiv, E.FloorMod)) and isinstance(b, E.Const) and b.value > 0:
                return _simplify_div_mod(e, ranges)
            if isinstance(e, (E.Min, E.Max)):
                if structural_equal(a, b):
                    return a
                d = bounds(simplify_node(E.Sub(a, b), ranges), ranges)
                if d[1] <= 0:
                    return a if isinstance(e, E.Min) else b
                if d[0] >= 0:
                    return b if isinstance(e, E.Min) else a
                return e
            if isinstance(e, E.CmpOp):
                terms, k = linear(E.Sub(a, b))
                diff = from_linear(terms, k, a.dtype)
                lo, hi = bounds(diff, ranges)
                decided = {
                    E.LT: (hi < 0, lo >= 0), E.LE: (hi <= 0, lo > 0),
                    E.GT: (lo > 0, hi <= 0), E.GE: (lo >= 0, hi < 0),
                    E.EQ: (lo == hi == 0, lo > 0 or hi < 0), E.NE: (lo > 0 or hi < 0, lo == hi == 0),
                }[type(e)]
                if decided[0]:
                    return E.Const(True, e.dtype)
                if decided[1]:
                    return E.Const(False, e.dtype)
                return e
        if isinstance(e, E.And):
            for x, y in ((a, b), (b, a)):
                if isinstance(x, E.Const):
                    return y if x.value else x
        if isinstance(e, E.Or):
            for x, y in ((a, b), (b, a)):
                if isinstance(x, E.Const):
                    return x if x.value else y
        if dt.is_float(e.dtype):
            if isinstance(e, E.Mul) and (E.is_const(b, 1.0)):
                return a
            if isinstance(e, E.Add) and E.is_const(b, 0.0):
                return a
        return e
    if isinstance(e, E.Not) and isinstance(e.a, E.Const):
        return E.Const(not e.a.value, e.dtype)
    if isinstance(e, E.Select):
        if isinstance(e.cond, E.Const):
            return e.t if e.cond.value else e.f
        if structural_equal(e.t, e.f):
            return e.t
        return e
    if isinstance(e, E.Cast) and isinstance(e.value, E.Const) and dt.lanes(e.dtype) == 1:
        v = e.value.value
        if dt.is_float(e.dtype):
            return E.Const(float(v), e.dtype)
        if dt.is_bool(e.dtype):
            return E.Const(bool(v), e.dtype)
        v = int(v)  # truncation toward zero, then wrap
        lo, hi = dt.int_range(e.dtype)
        return E.Const((v - lo) % (hi - lo + 1) + lo, e.dtype)
    if isinstance(e, E.Cast) and e.value.dtype == e.dtype:
        return e.value
    return e


def simplify(e, ranges=None):
    """Simplify an expression (or every expression inside a statement) bottom-up.

    `ranges` maps Vars to inclusive constant (lo, hi) bounds. For statements, the ranges of
    loop variables are added as the walk descends into For bodies.
    """
    from . import stmt as S
    ranges = dict(ranges or {})

    def rec(n):
        if isinstance(n, S.For):
            if E.is_const(n.extent, 1):   # a one-iteration loop is its body at the minimum
                from .functor import substitute
                return rec(substitute(n.body, {n.var: n.min}))
            lo, hi = bounds(rec(n.min), ranges)
            elo, ehi = bounds(rec(n.extent), ranges)
            saved = ranges.get(n.var)
            if lo != -INF and ehi != INF:
                ranges[n.var] = (lo, hi + ehi - 1)
            out = map_children(n, rec)
            if saved is None:
                ranges.pop(n.var, None)
            else:
                ranges[n.var] = saved
            return out
        if isinstance(n, E.Select):
            # a condition that folds (an unrolled index's select chain, a Winograd transform row)
            # leaves one branch: simplify only that one
            cond = rec(n.cond)
            if isinstance(cond, E.Const):
                return rec(n.t if cond.value else n.f)
            return simplify_node(E.Select(cond, rec(n.t), rec(n.f)), ranges)
        n2 = map_children(n, rec)
        if isinstance(n2, E.Expr):
            return simplify_node(n2, ranges)
        if isinstance(n2, S.IfThenElse) and isinstance(n2.cond, E.Const):
            return n2.then_case if n2.cond.value else (n2.else_case or S.no_op())
        return n2
    return rec(e)


# --- symbolic relaxation for bound inference ---------------------------------------------

def relax(e, dom):
    """Symbolic (lo, hi) of integer expression e where each Var in `dom` ranges over
    dom[var] = (lo_expr, hi_expr) inclusive and other variables are fixed points."""
    if isinstance(e, E.Var):
        return dom.get(e, (e, e))
    if isinstance(e, E.Const):
        return e, e
    if isinstance(e, E.Add):
        (a0, a1), (b0, b1) = relax(e.a, dom), relax(e.b, dom)
        return E.Add(a0, b0), E.Add(a1, b1)
    if isinstance(e, E.Sub):
        (a0, a1), (b0, b1) = relax(e.a, dom), relax(e.b, dom)
        return E.Sub(a0, b1), E.Sub(a1, b0)
    if isinstance(e, E.Mul):
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, E.Const):
                lo, hi = relax(x, dom)
                if y.value >= 0:
                    return E.Mul(lo, y), E.Mul(hi, y)
                return E.Mul(hi, y), E.Mul(lo, y)
    if isinstance(e, E.FloorDiv) and isinstance(e.b, E.Const) and e.b.value > 0:
        lo, hi = relax(e.a, dom)
        return E.FloorDiv(lo, e.b), E.FloorDiv(hi, e.b)
    if isinstance(e, E.FloorMod) and isinstance(e.b, E.Const) and e.b.value > 0:
        lo, hi = relax(e.a, dom)
        if structural_equal(simplify(E.FloorDiv(lo, e.b)), simplify(E.FloorDiv(hi, e.b))):
            return E.FloorMod(lo, e.b), E.FloorMod(hi, e.b)
        return E.Const(0, e.dtype), E.Const(e.b.value - 1, e.dtype)
    if isinstance(e, (E.Min, E.Max)):
        (a0, a1), (b0, b1) = relax(e.a, dom), relax(e.b, dom)
        f = E.Min if isinstance(e, E.Min) else E.Max
        return f(a0, b0), f(a1, b1)
    if isinstance(e, E.Select):
        (a0, a1), (b0, b1) = relax(e.t, dom), relax(e.f, dom)
        return E.Min(a0, b0), E.Max(a1, b1)
    from .functor import free_vars
    if not (free_vars(e) & set(dom)):
        return e, e
    lo, hi = dt.int_range(e.dtype)
    return E.Const(lo, e.dtype), E.Const(hi, e.dtype)
