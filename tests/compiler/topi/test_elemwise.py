"""Elementwise, broadcast and activation operators against numpy."""
import numpy as np
import pytest

from vdla.compiler import te, topi


def rand(rng, shape, dtype="float32", lo=-3, hi=3):
    if dtype.startswith("int") or dtype.startswith("uint"):
        return rng.integers(lo, hi, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


@pytest.mark.parametrize("op,ref", [
    (topi.add, np.add), (topi.subtract, np.subtract), (topi.multiply, np.multiply),
    (topi.maximum, np.maximum), (topi.minimum, np.minimum), (topi.divide, np.divide),
])
@pytest.mark.parametrize("sa,sb", [((3, 1, 17), (5, 1)), ((7, 33), (7, 33)), ((1, 4, 1, 9), (3, 1, 5, 1))])
def test_broadcast_binary_float(op, ref, sa, sb, rng, compile_run):
    a, b = te.placeholder(sa, "float32", "a"), te.placeholder(sb, "float32", "b")
    c = op(a, b)
    aa, ba = rand(rng, sa), rand(rng, sb, lo=0.5, hi=3)
    np.testing.assert_allclose(compile_run(c, [a, b], [aa, ba]), ref(aa, ba), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "int32"])
def test_broadcast_int(dtype, rng, compile_run):
    a, b = te.placeholder((4, 19), dtype, "a"), te.placeholder((19,), dtype, "b")
    c = topi.divide(topi.add(a, b), topi.maximum(b, 1))   # floor division for ints
    aa, ba = rand(rng, (4, 19), dtype, -50, 50), rand(rng, (19,), dtype, -5, 9)
    s = (aa.astype(np.int64) + ba)
    if dtype == "int8":
        s = s.astype(np.int8).astype(np.int64)   # int8 add wraps
    np.testing.assert_array_equal(compile_run(c, [a, b], [aa, ba]), (s // np.maximum(ba, 1)).astype(dtype))


@pytest.mark.parametrize("op,ref", [
    (topi.relu, lambda x: np.maximum(x, 0)),
    (topi.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    (topi.tanh, np.tanh),
    (topi.exp, np.exp),
    (lambda x: topi.log(topi.abs(x)), lambda x: np.log(np.abs(x))),
    (lambda x: topi.sqrt(topi.abs(x)), lambda x: np.sqrt(np.abs(x))),
    (lambda x: topi.clip(x, -1.5, 0.7), lambda x: np.clip(x, -1.5, 0.7)),
    (lambda x: topi.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    (topi.hard_sigmoid, lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    (topi.hard_swish, lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    (topi.negative, np.negative),
    (topi.floor, np.floor),
    (topi.round, np.round),
])
def test_unary(op, ref, rng, compile_run):
    x = te.placeholder((3, 37), "float32", "x")
    xa = rand(rng, x.shape)
    xa[0, :4] = [0.5, 1.5, -2.5, 2.0]   # rounding ties go to even
    np.testing.assert_allclose(compile_run(op(x), [x], [xa]), ref(xa), rtol=2e-6, atol=1e-6)


def test_cast_and_where(rng, compile_run):
    x = te.placeholder((5, 11), "float32", "x")
    y = topi.cast(x, "int32")
    xa = rand(rng, x.shape, lo=-40, hi=40)
    np.testing.assert_array_equal(compile_run(y, [x], [xa]), xa.astype(np.int32))
    c = te.placeholder((5, 1), "bool", "c")
    w = topi.where(c, x, 0.0)
    ca = rng.integers(0, 2, (5, 1)).astype(bool)
    np.testing.assert_array_equal(compile_run(w, [c, x], [ca, xa]), np.where(ca, xa, 0).astype("float32"))


def test_mixed_dtypes_rejected():
    a, b = te.placeholder((4,), "int8", "a"), te.placeholder((4,), "int32", "b")
    with pytest.raises(TypeError, match="cast"):
        topi.add(a, b)
    with pytest.raises(ValueError, match="do not broadcast"):
        topi.add(te.placeholder((3, 4), "float32"), te.placeholder((5,), "float32"))
