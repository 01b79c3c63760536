"""The arithmetic simplifier (checked by evaluating random index expressions before and after
with Python's own integer semantics), the printer and the IR verifier."""
import itertools
import random

import pytest

from vdla.compiler.tir import arith
from vdla.compiler.tir import expr as E
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import substitute
from vdla.compiler.tir.printer import to_text
from vdla.compiler.tir.verify import IRError, verify


def evaluate(e, env):
    """Python reference semantics (// and % are floor division, like the IR's)."""
    if isinstance(e, E.Var):
        return env[e]
    if isinstance(e, E.Const):
        return e.value
    ops = {E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
           E.FloorDiv: lambda a, b: a // b, E.FloorMod: lambda a, b: a % b, E.Min: min, E.Max: max,
           E.LT: lambda a, b: a < b, E.LE: lambda a, b: a <= b, E.EQ: lambda a, b: a == b,
           E.And: lambda a, b: a and b}
    if type(e) in ops:
        return ops[type(e)](evaluate(e.a, env), evaluate(e.b, env))
    if isinstance(e, E.Select):
        return evaluate(e.t, env) if evaluate(e.cond, env) else evaluate(e.f, env)
    raise TypeError(type(e))


def random_expr(rnd, vars_, depth):
    if depth == 0 or rnd.random() < 0.25:
        return rnd.choice(vars_) if rnd.random() < 0.7 else E.Const(rnd.randint(-5, 9), "int32")
    kind = rnd.choice(["add", "sub", "mul", "div", "mod", "min", "max"])
    a = random_expr(rnd, vars_, depth - 1)
    if kind in ("mul", "div", "mod"):
        c = E.Const(rnd.choice([1, 2, 3, 4, 8, 16]), "int32")
        return {"mul": E.Mul, "div": E.FloorDiv, "mod": E.FloorMod}[kind](a, c)
    b = random_expr(rnd, vars_, depth - 1)
    return {"add": E.Add, "sub": E.Sub, "min": E.Min, "max": E.Max}[kind](a, b)


def test_simplify_preserves_value_on_random_expressions():
    rnd = random.Random(1234)
    x, y, z = E.Var("x"), E.Var("y"), E.Var("z")
    ranges = {x: (0, 7), y: (0, 15), z: (-3, 3)}
    for _ in range(400):
        e = random_expr(rnd, [x, y, z], 4)
        s = arith.simplify(e, ranges)
        # and once more with x fixed, as an unrolled loop simplifies its copies of a simplified body
        k = rnd.randint(0, 7)
        fixed = arith.simplify(substitute(s, {x: E.Const(k, "int32")}), ranges)
        for vals in itertools.islice(itertools.product(range(0, 8, 3), range(0, 16, 5), range(-3, 4, 2)), 30):
            env = dict(zip((x, y, z), vals))
            assert evaluate(s, env) == evaluate(e, env), f"{e!r} -> {s!r} at {vals}"
            env[x] = k
            assert evaluate(fixed, env) == evaluate(e, env), f"{e!r} -> {fixed!r} at x={k}, {vals[1:]}"


def test_a_rebuilt_expression_is_not_read_with_its_old_linear_form():
    """arith.linear keeps a sum's form on its node; a copy rebuilt with other children (an
    unrolled loop substituting its index) must not inherit it."""
    x, y = E.Var("x"), E.Var("y")
    e = arith.simplify(E.Add(E.Mul(E.Add(x, y), E.Const(3, "int32")), E.Const(2, "int32")))
    assert arith.linear(e)[1] == 2                          # cached on e now
    moved = substitute(e, {x: E.Add(y, E.Const(5, "int32"))})
    terms, const = arith.linear(moved)
    assert const == 17 and [c for _, c in terms.values()] == [6]
    assert to_text(arith.simplify(moved)) == to_text(arith.simplify(E.Add(E.Mul(y, E.Const(6, "int32")),
                                                                          E.Const(17, "int32"))))


@pytest.mark.parametrize("offset", [0, 3, 6, -3, 5])
def test_nested_floor_division_keeps_the_multiples_beside_it(offset):
    """(x // 4 + offset) // 3: the nested divisions merge to x // 12, and a multiple of 3 beside
    them still adds its quotient (a bilinear Resize's second tap read the first tap's row on the
    GPU when 3 // 3 was dropped)."""
    x = E.Var("x")
    e = E.FloorDiv(E.Add(E.FloorDiv(x, E.Const(4, "int32")), E.Const(offset, "int32")), E.Const(3, "int32"))
    s = arith.simplify(e, {x: (0, 47)})
    assert all(evaluate(s, {x: v}) == evaluate(e, {x: v}) for v in range(48)), f"{e!r} -> {s!r}"


def test_split_fuse_index_arithmetic_cancels():
    xo, xi, f = E.Var("xo"), E.Var("xi"), E.Var("f")
    ranges = {xo: (0, 9), xi: (0, 7), f: (0, 63)}
    assert arith.simplify((xo * 8 + xi) // 8, ranges) is xo
    assert arith.simplify((xo * 8 + xi) % 8, ranges) is xi
    assert arith.prove(xo * 8 + xi < 80, ranges) is True
    assert arith.prove(xo * 8 + xi < 79, ranges) is None
    assert arith.prove(xi >= 8, ranges) is False
    assert to_text(arith.simplify(E.Min(xi, E.Const(9, "int32")), ranges)) == "xi"


def test_constant_folding_wraps_like_the_machine():
    c = arith.simplify(E.Add(E.Const(120, "int8"), E.Const(10, "int8")))
    assert c.value == -126
    assert arith.simplify(E.Cast("int8", E.Const(300, "int32"))).value == 44
    assert arith.simplify(E.Cast("int32", E.Const(-2.7, "float32"))).value == -2


def test_printer_is_readable():
    buf = S.Buffer("A", (4, 8), "float32")
    out = S.Buffer("B", (4,), "float32")
    i, j = E.Var("i"), E.Var("j")
    body = S.For(i, 0, 4, S.ForKind.PARALLEL,
                 S.For(j, 0, 8, S.ForKind.SERIAL,
                       S.BufferStore(out, E.BufferLoad(out, [i]) + E.BufferLoad(buf, [i, j]), [i])))
    text = to_text(S.PrimFunc("rowsum", [buf, out], body))
    assert text == ("def rowsum(A: float32[4, 8], B: float32[4]):\n"
                    "  for i in range(4): # parallel\n"
                    "    for j in range(8):\n"
                    "      B[i] = (B[i] + A[i, j])")


def test_verifier_catches_malformed_ir():
    buf = S.Buffer("A", (4,), "float32")
    i, j = E.Var("i"), E.Var("j")
    free = S.PrimFunc("f", [buf], S.For(i, 0, 4, S.ForKind.SERIAL, S.BufferStore(buf, E.Const(1.0, "float32"), [j])))
    with pytest.raises(IRError, match="variable j used outside any loop"):
        verify(free, "test")
    other = S.Buffer("T", (4,), "float32")
    unalloc = S.PrimFunc("f", [buf], S.For(i, 0, 4, S.ForKind.SERIAL, S.BufferStore(other, E.Const(1.0, "float32"), [i])))
    with pytest.raises(IRError, match="store to T, which is neither a parameter nor allocated"):
        verify(unalloc, "test")
    badtype = S.PrimFunc("f", [buf], S.For(i, 0, 4, S.ForKind.SERIAL, S.BufferStore(buf, E.Const(1, "int32"), [i])))
    with pytest.raises(IRError, match="store of int32 into float32 buffer A"):
        verify(badtype, "test")
    ok = S.PrimFunc("f", [buf], S.For(i, 0, 4, S.ForKind.SERIAL, S.BufferStore(buf, E.Const(1.0, "float32"), [i])))
    assert verify(ok, "test") is ok


def test_te_dtype_rules():
    from vdla.compiler import te
    a = te.placeholder((4,), "int8", "a")
    with pytest.raises(TypeError, match="mixed dtypes int8 and int32"):
        te.compute((4,), lambda i: a[i] + te.cast("int32", a[i]))
    with pytest.raises(TypeError, match="use '//'"):
        te.compute((4,), lambda i: a[i] / 2)
    f = te.placeholder((4,), "float32", "f")
    assert te.compute((4,), lambda i: f[i] * 2).dtype == "float32"     # literal adopts float32
    assert te.compute((4,), lambda i: te.cast("int32", a[i]) * 3).dtype == "int32"
    with pytest.raises(ValueError, match="does not fit in int8"):
        te.compute((4,), lambda i: a[i] + 300)


def test_a_select_whose_condition_folds_simplifies_only_the_taken_branch():
    i = E.Var("i", "int32")
    taken = E.Add(i, E.Const(0, "int32"))
    # the other branch divides by zero: folding it would raise, so it must not be visited
    untaken = E.FloorDiv(E.Const(1, "int32"), E.Const(0, "int32"))
    e = E.Select(E.LT(E.Const(1, "int32"), E.Const(2, "int32")), taken, untaken)
    assert arith.structural_equal(arith.simplify(e), i)
    kept = E.Select(E.LT(i, E.Const(2, "int32")), taken, E.Mul(i, E.Const(2, "int32")))
    assert isinstance(arith.simplify(kept), E.Select)


def test_evaluate_agrees_with_the_simplifier_on_bound_variables():
    """arith.evaluate folds what simplify folds once every variable is a constant: floor division
    and modulo of negative values, comparisons, && and !."""
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    exprs = [E.FloorMod(E.Sub(i, E.Const(3, "int32")), E.Const(7, "int32")),
             E.FloorDiv(E.Mul(j, E.Const(-5, "int32")), E.Const(4, "int32")),
             E.And(E.GE(E.Add(i, j), E.Const(1, "int32")), E.Not(E.LT(E.Max(i, j), E.Const(2, "int32"))))]
    for e in exprs:
        for vi, vj in [(-9, 4), (0, 0), (5, -3), (13, 11)]:
            env = {i: vi, j: vj}
            folded = arith.simplify(substitute(e, {v: E.Const(x, "int32") for v, x in env.items()}))
            assert arith.evaluate(e, env) == folded.value, (e, env)
