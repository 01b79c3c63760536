"""unswitch_loops (vdla.compiler.tir.passes.unswitch): a depthwise convolution's register tile
gets a copy whose loads test no bound of the image, run exactly where every dropped test holds
for every kernel row and lane; an image with too few interior rows keeps its row
tests; a Winograd GEMM tile whose stores a row-group tail guards gets a copy without the
guard; every kernel still computes what numpy does."""
import itertools

import numpy as np
import pytest

from vdla.compiler import build, topi
from vdla.compiler import te
from vdla.compiler.build import cpu_passes, lower
from vdla.compiler.target import Target
from vdla.compiler.tir import expr as E
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.arith import prove, skey
from vdla.compiler.tir.functor import free_vars, visit
from vdla.compiler.tir.passes.unswitch import MIN_INTERIOR_SHARE

CB = 16


def _depthwise(h, w, k, stride, pad, dilation=1):
    x = te.placeholder((1, 2, h, w, CB), "float32", "x")
    wt = te.placeholder((2, 1, k, k, 1, CB), "float32", "w")
    y = topi.depthwise_conv2d_nchwc(x, wt, strides=stride, pads=pad, dilations=dilation)
    s = topi.schedule_for([y], Target.host(threads=2))
    return s, [x, wt, y]


def _numpy_depthwise(xa, wa, stride, pad, dilation):
    n, cbo, h, w, cb = xa.shape
    k = wa.shape[2]
    xp = np.pad(xa, [(0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0)])
    oh = (h + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    out = np.zeros((n, cbo, oh, ow, cb), np.float32)
    for ry, rx in itertools.product(range(k), range(k)):
        window = xp[:, :, ry * dilation:ry * dilation + stride * oh:stride, rx * dilation:rx * dilation + stride * ow:stride]
        out += window * wa[None, :, 0, ry, rx, 0, None, None, :]
    return out


def _unswitched(s, args):
    """The kernel's loop IR right after unswitch_loops (later passes flatten and vectorize it)."""
    passes = cpu_passes()
    upto = [name for name, _ in passes].index("unswitch_loops") + 1
    return lower(s, args, "dw", check=True, passes=passes[:upto])


def _unswitches(func):
    """(the IfThenElse unswitch_loops made, the ranges of the loops around it) for each: the
    tile's copy without the tests, else the tile as it was."""
    found = []

    def walk(n, ranges):
        if isinstance(n, S.IfThenElse) and isinstance(n.then_case, S.Allocate) \
                and isinstance(n.else_case, S.Allocate) and n.then_case.buffer is n.else_case.buffer:
            found.append((n, ranges))
            return
        if isinstance(n, S.For):
            ranges = {**ranges, n.var: range(n.min.value, n.min.value + n.extent.value)}
        for _, child in n.children():
            for c in child if isinstance(child, tuple) else (child,):
                if isinstance(c, S.Stmt):
                    walk(c, ranges)
    walk(func.body, {})
    return found


def _parallel_var(func):
    found = []
    visit(func.body, lambda n: found.append(n.var) if isinstance(n, S.For) and n.kind is S.ForKind.PARALLEL else None)
    return found[-1]      # post-order: the outermost comes last


def _select_tests(body, var):
    found = {}
    visit(body, lambda n: found.update({skey(c): c for c in _conjuncts(n.cond) if var is None or var in free_vars(c)})
          if isinstance(n, E.Select) else None)
    return found


def _conjuncts(c):
    return _conjuncts(c.a) + _conjuncts(c.b) if isinstance(c, E.And) else [c]


def _loop_ranges(body):
    out = {}
    visit(body, lambda n: out.update({n.var: range(n.min.value, n.min.value + n.extent.value)})
          if isinstance(n, S.For) and isinstance(n.extent, E.Const) and isinstance(n.min, E.Const) else None)
    return out


CASES = [(14, 13, 3, 1, 1, 1), (17, 12, 3, 2, 1, 1), (12, 12, 5, 1, 2, 1), (16, 9, 3, 1, 2, 2)]


@pytest.mark.parametrize("h,w,k,stride,pad,dilation", CASES)
def test_interior_tiles_load_without_row_conditions_and_equal_numpy(h, w, k, stride, pad, dilation, rng):
    s, args = _depthwise(h, w, k, stride, pad, dilation)
    func = _unswitched(s, args)
    rows = _parallel_var(func)
    found = _unswitches(func)
    assert found
    for unswitched, _ in found:
        assert _select_tests(unswitched.else_case, rows), "the border copy keeps its row tests"
        assert not _select_tests(unswitched.then_case, rows), "the interior copy tests no row bound"
    xa = rng.standard_normal(args[0].shape).astype("float32")
    wa = rng.standard_normal(args[1].shape).astype("float32")
    out = np.zeros([int(d) for d in args[2].shape], np.float32)
    build(s, args, name="dw").load().run("dw", [xa, wa, out])
    np.testing.assert_allclose(out, _numpy_depthwise(xa, wa, stride, pad, dilation), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("h,w,k,stride,pad,dilation", CASES)
def test_the_interior_copy_runs_exactly_where_every_dropped_test_holds_for_every_tap(h, w, k, stride, pad, dilation):
    """Brute force over the parallel loop's iterations and the inner loops' values: the copy's
    condition holds at an iteration exactly when each test it dropped holds for all of them."""
    s, args = _depthwise(h, w, k, stride, pad, dilation)
    for unswitched, outer in _unswitches(_unswitched(s, args)):
        tile = unswitched.else_case
        tests = _select_tests(tile, None)
        dropped = [c for key, c in tests.items() if key not in _select_tests(unswitched.then_case, None)]
        assert dropped
        inner = _loop_ranges(tile)
        cond_vars = sorted(free_vars(unswitched.cond), key=lambda u: u.name)
        assert set(cond_vars) <= set(outer)
        held = []
        for point in itertools.product(*(outer[u] for u in cond_vars)):
            fixed = {u: (x, x) for u, x in zip(cond_vars, point)}
            want = True
            for c in dropped:
                free = sorted((u for u in free_vars(c) if u not in fixed), key=lambda u: u.name)
                assert set(free) <= set(inner), "a dropped test reads only the tile's loops and the condition's variables"
                for values in itertools.product(*(inner[u] for u in free)):
                    want = want and prove(c, {**fixed, **{u: (x, x) for u, x in zip(free, values)}}) is True
            assert prove(unswitched.cond, fixed) is want, point
            held.append(want)
        assert sum(held) >= MIN_INTERIOR_SHARE * len(held)


def test_an_image_with_too_few_interior_rows_keeps_its_row_tests(rng):
    """3 rows padded by 1: one interior row in three, below MIN_INTERIOR_SHARE; the copy drops
    only the column tests of the tiles inside the row (2 of 4)."""
    s, args = _depthwise(3, 16, 3, 1, 1)
    func = _unswitched(s, args)
    rows = _parallel_var(func)
    assert all(_select_tests(unswitched.then_case, rows) for unswitched, _ in _unswitches(func))
    xa = rng.standard_normal(args[0].shape).astype("float32")
    wa = rng.standard_normal(args[1].shape).astype("float32")
    out = np.zeros([int(d) for d in args[2].shape], np.float32)
    build(s, args, name="dw").load().run("dw", [xa, wa, out])
    np.testing.assert_allclose(out, _numpy_depthwise(xa, wa, 1, 1, 1), rtol=1e-5, atol=1e-5)


def _guard_tests(body):
    found = {}
    visit(body, lambda n: found.update({skey(c): c for c in _conjuncts(n.cond)})
          if isinstance(n, S.IfThenElse) else None)
    return found


def test_a_tile_whose_stores_a_row_group_tail_guards_gets_a_copy_without_the_guard():
    """The Winograd GEMM's register tile of 2 rows of tiles, in steps of 4 rows over 7 (the
    second step 3: a tile with one row): the copy stores without the row guard, run exactly at
    the tiles whose rows both exist."""
    from vdla.compiler.topi.cpu_knobs import WinogradKnobs
    x = te.placeholder((1, 2, 14, 14, CB), "float32", "x")
    u = te.placeholder((4, 4, 2, 2, CB, CB), "float32", "u")
    y = topi.conv2d_nchwc_winograd(x, u, pads=1)
    s = topi.schedule_for([y], Target.host(threads=2), WinogradKnobs(False, 7, 2, 4, 2))
    func = _unswitched(s, [x, u, y])
    gemm = [(n, outer) for n, outer in _unswitches(func) if n.then_case.buffer.name.startswith("winograd_gemm")]
    assert len(gemm) == 1
    unswitched, outer = gemm[0]
    assert _guard_tests(unswitched.else_case) and not _guard_tests(unswitched.then_case)
    step, pair = sorted(free_vars(unswitched.cond), key=lambda v: v.name)     # b.y.o.o.f, ty.o
    for a, b in itertools.product(outer[step], outer[pair]):
        assert prove(unswitched.cond, {step: (a, a), pair: (b, b)}) is (4 * a + 2 * b + 1 < 7)
