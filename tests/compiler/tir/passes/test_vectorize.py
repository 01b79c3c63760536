"""vectorize_loops (vdla.compiler.tir.passes.vectorize): a vectorized loop becomes vector
expressions: affine accesses ramps (contiguous or strided), other indices lane-wise gathers; what
cannot be vectorized stays a serial loop marked for the backend, and every kernel still computes
what numpy does."""
import numpy as np
import pytest

from vdla.compiler import build, te
from vdla.compiler.build import lower
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir import expr as E
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import visit


def _loops(func):
    found = []
    visit(func.body, lambda n: found.append(n) if isinstance(n, S.For) else None)
    return found


def _ramps(func):
    found = []
    visit(func.body, lambda n: found.append(n) if isinstance(n, E.Ramp) else None)
    return found


def _run(s, args, inputs, out_shape, out_dtype="float32"):
    out = np.zeros(out_shape, out_dtype)
    build(s, args, name="f").load().run("f", [*inputs, out])
    return out


def _vectorized(y, width=8):
    s = create_schedule(y)
    _, inner = s[y].split(s[y].op.axis[-1], width)
    s[y].vectorize(inner)
    return s


def test_contiguous_and_strided_accesses_become_ramps(rng):
    x = te.placeholder((4, 32), "float32", "x")
    y = te.compute((4, 16), lambda i, j: x[i, 2 * j] + x[i, j], "y")     # stride 2 and stride 1
    s = _vectorized(y)
    func = lower(s, [x, y], "f", check=True)
    assert {r.stride.value for r in _ramps(func)} >= {1, 2}
    assert not any(loop.kind is S.ForKind.VECTORIZED for loop in _loops(func))
    xa = rng.standard_normal((4, 32)).astype(np.float32)
    np.testing.assert_allclose(_run(s, [x, y], [xa], (4, 16)), xa[:, ::2][:, :16] + xa[:, :16], rtol=1e-6)


def test_a_non_affine_index_is_a_lane_wise_gather(rng):
    x = te.placeholder((64,), "float32", "x")
    y = te.compute((16,), lambda j: x[(j * j) % 64] * 3.0, "y")
    s = _vectorized(y)
    func = lower(s, [x, y], "f", check=True)
    assert not any(loop.annotations.get("not_vectorized") for loop in _loops(func))
    xa = rng.standard_normal(64).astype(np.float32)
    j = np.arange(16)
    np.testing.assert_allclose(_run(s, [x, y], [xa], (16,)), xa[(j * j) % 64] * 3, rtol=1e-6)


def test_a_reduction_inside_stays_a_serial_loop_with_the_reason(rng):
    a = te.placeholder((8, 24), "float32", "a")
    k = te.reduce_axis((0, 24), "k")
    y = te.compute((8,), lambda i: te.sum(a[i, k] * a[i, k], axis=k), "y")
    s = create_schedule(y)
    s[y].vectorize(s[y].op.axis[0])
    func = lower(s, [a, y], "f", check=True)
    kept = [loop for loop in _loops(func) if loop.annotations.get("vectorize_hint")]
    assert kept and all(loop.kind is S.ForKind.SERIAL for loop in kept)
    assert "inside a vectorized loop" in kept[0].annotations["not_vectorized"]
    aa = rng.standard_normal((8, 24)).astype(np.float32)
    np.testing.assert_allclose(_run(s, [a, y], [aa], (8,)), (aa * aa).sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("width", [1, 4, 16])
def test_selects_casts_and_widths(rng, width):
    x = te.placeholder((3, 16), "float32", "x")
    y = te.compute((3, 16), lambda i, j: E.Select(x[i, j] > 0.0, x[i, j], x[i, j] * 0.1).astype("float32")
                   + j.astype("float32"), "y")
    s = _vectorized(y, width)
    func = lower(s, [x, y], "f", check=True)
    assert bool(_ramps(func)) == (width > 1)
    xa = rng.standard_normal((3, 16)).astype(np.float32)
    want = np.where(xa > 0, xa, xa * np.float32(0.1)) + np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(_run(s, [x, y], [xa], (3, 16)), want, rtol=1e-6)


@pytest.mark.parametrize("width,offset,contiguous", [(8, 0, True), (16, 0, True), (8, 4, False), (4, 12, True)])
def test_a_block_index_over_lanes_in_one_block_is_one_value(rng, width, offset, contiguous):
    """x packed in blocks of 16 (as the accelerator's layouts are), read at c // 16 and c % 16:
    over lanes that stay in one block (8 lanes from 8 i, 4 from 4 i + 12) the block is one value
    and the offset a ramp, so the load is contiguous; lanes that can straddle two blocks (8 from
    8 i + 4) stay a gather. Either way the kernel computes what numpy does."""
    x = te.placeholder((6, 16), "float32", "x")
    n = 80 - 16
    y = te.compute((n,), lambda c: x[(c + offset) // 16, (c + offset) % 16] * 2.0, "y")
    s = _vectorized(y, width)
    func = lower(s, [x, y], "f", check=True)
    gathers = []
    visit(func.body, lambda e: gathers.append(e) if isinstance(e, E.BufferLoad) and e.buffer.name == "x"
          and not isinstance(e.indices[0], E.Ramp) and E.dt.lanes(e.dtype) > 1 else None)
    assert (not gathers) == contiguous, gathers
    xa = rng.standard_normal((6, 16)).astype(np.float32)
    np.testing.assert_array_equal(_run(s, [x, y], [xa], (n,)), xa.reshape(-1)[offset:offset + n] * 2)
