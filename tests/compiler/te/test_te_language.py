"""The tensor-expression language: shapes, dtypes, reductions and the errors it gives."""
import numpy as np
import pytest

from vdla.compiler import build, te
from vdla.compiler.schedule import create_schedule


def test_compute_shape_dtype_and_inputs():
    a = te.placeholder((3, 4), "int8", "a")
    b = te.placeholder((4,), "int8", "b")
    c = te.compute((3, 4), lambda i, j: te.cast("int32", a[i, j]) + te.cast("int32", b[j]), "c")
    assert c.shape == (3, 4) and c.dtype == "int32" and c.name == "c"
    assert c.op.input_tensors == [a, b]
    assert [iv.name for iv in c.op.axis] == ["i", "j"]


def test_reductions_and_select_run_like_numpy(rng):
    x = te.placeholder((5, 9), "float32", "x")
    k = te.reduce_axis((2, 7), "k")            # a reduction over [2, 7)
    s_ = te.compute((5,), lambda i: te.sum(x[i, k], axis=k), "s")
    m = te.compute((5,), lambda i: te.max(x[i, k], axis=k), "m")
    k2 = te.reduce_axis((0, 9), "k2")
    pos = te.compute((5,), lambda i: te.sum(te.if_then_else(x[i, k2] > 0, x[i, k2], 0.0), axis=k2), "pos")
    k3 = te.reduce_axis((0, 9), "k3")
    cnt = te.compute((5,), lambda i: te.sum(te.cast("int32", x[i, k3] > 0.5), axis=k3, where=k3 < 5), "cnt")
    sched = create_schedule([s_, m, pos, cnt])
    lib = build(sched, [x, s_, m, pos, cnt], name="r").load()
    xa = rng.standard_normal(x.shape).astype("float32")
    outs = [np.zeros(5, "float32"), np.zeros(5, "float32"), np.zeros(5, "float32"), np.zeros(5, "int32")]
    lib.run("r", [xa] + outs)
    np.testing.assert_allclose(outs[0], xa[:, 2:7].sum(1), rtol=1e-5)
    np.testing.assert_array_equal(outs[1], xa[:, 2:7].max(1))
    np.testing.assert_allclose(outs[2], np.where(xa > 0, xa, 0).sum(1), rtol=1e-5)
    np.testing.assert_array_equal(outs[3], (xa[:, :5] > 0.5).sum(1))


def test_fmax_ignores_nan_where_max_keeps_it(rng):
    """te.fmax is numpy's fmax.reduce (-inf for a row of NaN), te.max numpy's max."""
    x = te.placeholder((4, 9), "float32", "x")
    k, k2 = te.reduce_axis((0, 9), "k"), te.reduce_axis((0, 9), "k2")
    fm = te.compute((4,), lambda i: te.fmax(x[i, k], axis=k), "fm")
    m = te.compute((4,), lambda i: te.max(x[i, k2], axis=k2), "m")
    lib = build(create_schedule([fm, m]), [x, fm, m], name="r").load()
    xa = rng.standard_normal(x.shape).astype("float32")
    xa[1, 4], xa[2, 0], xa[3, :] = np.nan, np.nan, np.nan
    outs = [np.zeros(4, "float32"), np.zeros(4, "float32")]
    with np.errstate(invalid="ignore"):
        lib.run("r", [xa] + outs)
    np.testing.assert_array_equal(outs[0], np.where(np.isnan(xa).all(1), -np.inf, np.fmax.reduce(xa, axis=1)))
    np.testing.assert_array_equal(outs[1], xa.max(1))


def test_language_errors():
    a = te.placeholder((3, 4), "float32", "a")
    with pytest.raises(TypeError, match="fcompute takes 1 indices but the shape has 2"):
        te.compute((3, 4), lambda i: a[i, 0])
    with pytest.raises(IndexError, match="tensor a has 2 dimensions but was indexed with 1"):
        te.compute((3,), lambda i: a[i])
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(ValueError, match="reduction must be the whole body"):
        te.compute((3,), lambda i: te.sum(a[i, k], axis=k) * 2.0)
    with pytest.raises(TypeError, match="is not a te.reduce_axis"):
        te.compute((3, 4), lambda i, j: te.sum(a[i, j], axis=j))
    with pytest.raises(ValueError, match="every dimension must be positive"):
        te.placeholder((3, 0), "float32")
    with pytest.raises(ValueError, match="unknown dtype"):
        te.placeholder((3,), "float31")
    with pytest.raises(TypeError, match="truth value"):
        te.compute((3, 4), lambda i, j: a[i, j] if a[i, j] > 0 else 0.0)
    with pytest.raises(TypeError, match="select branches have different dtypes"):
        te.if_then_else(a[0, 0] > 0, a[0, 0], te.cast("int32", a[0, 0]))
