"""Affine index forms and DMA guards (vdla.compiler.codegen.vdla.affine): forms evaluate like the
expressions they come from, guards hold exactly where their condition does, the valid range of a
loop variable is the one brute force finds, and what the DMA cannot express is named."""
import itertools
import random

import pytest

from vdla.compiler.codegen.vdla.affine import Affine, guard_atoms, valid_range
from vdla.compiler.codegen.vdla.errors import VdlaLoweringError
from vdla.compiler.tir import expr as E

I, J, K = E.Var("i"), E.Var("j"), E.Var("k")
_OPS = {E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
        E.GE: lambda a, b: a >= b, E.GT: lambda a, b: a > b, E.LE: lambda a, b: a <= b, E.LT: lambda a, b: a < b,
        E.And: lambda a, b: a and b}


def evaluate(e, env):
    """The integer value of an index expression or condition with Python's own arithmetic."""
    if isinstance(e, E.Var):
        return env[e]
    if isinstance(e, E.Const):
        return e.value
    return _OPS[type(e)](evaluate(e.a, env), evaluate(e.b, env))


def _random_affine(r: random.Random):
    e = E.const(r.randint(-20, 20))
    for v in (I, J, K):
        c = r.randint(-4, 4)
        if c:
            e = e + v * c if r.random() < 0.5 else (v * c) + e
    if r.random() < 0.5:                       # a nested form the simplifier must flatten
        e = (e + I * 2) - I * 2 + (J - J)
    return e


def _grid(vars_, lo=-3, hi=4):
    for values in itertools.product(range(lo, hi), repeat=len(vars_)):
        yield dict(zip(vars_, values))


def test_forms_evaluate_like_their_expressions():
    r = random.Random(1)
    for _ in range(40):
        e = _random_affine(r)
        form = Affine.of(e, "test")
        for env in _grid((I, J, K), -2, 3):
            assert form.value(env) == evaluate(e, env), (e, form)


def test_arithmetic_on_forms():
    a = Affine(3, {I: 2, J: -1})
    b = Affine(-1, {J: 1, K: 4})
    s = a + b
    assert s.const == 2 and s.coeffs == {I: 2, K: 4}           # J cancels and is dropped
    assert (a + 5).const == 8 and a.scale(3).coeffs == {I: 6, J: -3}
    assert Affine(8, {I: 16}).exact_div(8, "w").coeffs == {I: 2}
    assert a.bind({I: 10}).const == 23 and a.bind({I: 10}).vars() == {J}
    assert repr(Affine(4, {I: 2})) == "2*i + 4" and repr(Affine(-1)) == "-1"


def test_a_form_that_is_not_whole_elements_or_not_affine_is_named():
    with pytest.raises(VdlaLoweringError, match=r"load: offset 2\*i \+ 3 is not a whole number of 2-lane elements"):
        Affine(3, {I: 2}).exact_div(2, "load")
    with pytest.raises(VdlaLoweringError, match=r"store: index .* is not affine in the loop variables"):
        Affine.of(I * J, "store")


@pytest.mark.parametrize("make", [
    lambda: I >= 1, lambda: I < 5, lambda: (I * 2 + 1) > J, lambda: (I >= 1) & (J <= I + 2),
    lambda: ((I - 2) >= 0) & ((J * 3) < 7) & (I <= 4),
])
def test_guards_hold_exactly_where_their_condition_does(make):
    cond = make()
    atoms = guard_atoms(cond, "pad")
    for env in _grid((I, J), -4, 8):
        assert all(a.value(env) >= 0 for a in atoms) == bool(evaluate(cond, env)), env


def test_no_condition_and_true_need_no_guard():
    assert guard_atoms(None, "pad") == [] and guard_atoms(E.const(True, "bool"), "pad") == []


@pytest.mark.parametrize("make, extent", [
    (lambda: (I >= 2) & (I < 7), 10), (lambda: (I * 3 - 4) >= 0, 6), (lambda: (I * -2 + 9) > 0, 8),
    (lambda: I >= 12, 10), (lambda: (I * 4) <= 6, 3),
])
def test_the_valid_range_is_the_brute_force_one(make, extent):
    atoms = guard_atoms(make(), "pad")
    lo, hi = valid_range(atoms, I, extent, "pad")
    ok = [i for i in range(extent) if all(a.value({I: i}) >= 0 for a in atoms)]
    assert (lo, hi) == ((ok[0], ok[-1] + 1) if ok else (lo, lo))
    assert ok == list(range(lo, hi))


def test_guards_the_dma_cannot_pad_are_named():
    with pytest.raises(VdlaLoweringError, match=r"pad: a guard couples \['i', 'j'\]"):
        valid_range(guard_atoms(I + J >= 2, "pad"), I, 4, "pad")
    with pytest.raises(VdlaLoweringError, match=r"pad: condition .* is not a conjunction of comparisons"):
        guard_atoms((I >= 1) | (J >= 1), "pad")
