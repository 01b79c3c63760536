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
