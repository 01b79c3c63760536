"""unroll_loops (vdla.compiler.tir.passes.unroll): an unrolled loop of up to MAX_UNROLL iterations
becomes one copy of its body per iteration with the index a constant; a longer one stays a serial
loop; results equal numpy either way."""
import numpy as np
import pytest

from vdla.compiler import build, te
from vdla.compiler.build import lower
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import visit
from vdla.compiler.tir.passes.unroll import MAX_UNROLL


@pytest.mark.parametrize("n", [1, 7, MAX_UNROLL, MAX_UNROLL + 1])
def test_short_loops_unroll_and_long_ones_stay_serial(n, rng):
    x = te.placeholder((n,), "float32", "x")
    y = te.compute((n,), lambda i: x[i] * 2.0 + 1.0, "y")
    s = create_schedule(y)
    s[y].unroll(s[y].op.axis[0])
    func = lower(s, [x, y], "f", check=True)
    loops = []
    visit(func.body, lambda node: loops.append(node) if isinstance(node, S.For) else None)
    if n <= MAX_UNROLL:
        assert loops == [] and repr(func).count("y[") == n
    else:
        assert [loop.kind for loop in loops] == [S.ForKind.SERIAL]
    xa = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    build(s, [x, y], name="f").load().run("f", [xa, out])
    np.testing.assert_allclose(out, xa * 2 + 1, rtol=1e-6)


def test_a_select_chain_over_the_unrolled_index_keeps_one_branch_per_copy(rng):
    """y[i] = a different combination of x per i (as a Winograd transform row): each unrolled
    copy holds only its own branch, and the results are numpy's."""
    x = te.placeholder((4,), "float32", "x")
    rows = [x[0] + x[1], x[1] - x[2], x[2] * 3.0, x[3] - x[0]]

    def chain(i):
        expr = rows[-1]
        for k in range(len(rows) - 2, -1, -1):
            expr = te.if_then_else(i.equal(k), rows[k], expr)
        return expr
    y = te.compute((4,), chain, "y")
    s = create_schedule(y)
    s[y].unroll(s[y].op.axis[0])
    func = lower(s, [x, y], "f", check=True)
    text = repr(func)
    assert "select" not in text and text.count("y[") == 4
    xa = rng.standard_normal(4).astype(np.float32)
    out = np.zeros(4, np.float32)
    build(s, [x, y], name="f").load().run("f", [xa, out])
    np.testing.assert_allclose(out, [xa[0] + xa[1], xa[1] - xa[2], xa[2] * 3, xa[3] - xa[0]], rtol=1e-6)
