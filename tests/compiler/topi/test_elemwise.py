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


def _erf(x):
    import math
    return np.vectorize(math.erf)(x.astype(np.float64))


def _tanh_approximation(x):
    x = x.astype(np.float64)
    return np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))


def _softplus(x):
    return np.logaddexp(0, x.astype(np.float64))


@pytest.mark.parametrize("op,ref,tol,atol", [
    (topi.erf, _erf, 2e-7, 1e-38),
    (topi.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), 1e-6, 1.2e-7),
    (lambda x: topi.gelu(x, "tanh"), lambda x: 0.5 * x * (1 + _tanh_approximation(x)), 1e-6, 1.2e-7),
    (topi.softplus, _softplus, 1e-6, 1e-38),
    (lambda x: topi.elu(x, 0.7), lambda x: np.where(x < 0, 0.7 * np.expm1(x.astype(np.float64)), x), 1e-6, 1.2e-7),
    (lambda x: topi.swish(x, 0.5), lambda x: x / (1 + np.exp(-0.5 * x.astype(np.float64))), 1e-6, 1e-38),
    (topi.reciprocal, lambda x: 1 / x, 1e-7, 0),
])
def test_activations_to_float_precision(op, ref, tol, atol, rng, compile_run):
    """Relative error against float64 over wide ranges, at 0, in the tails and at the extremes;
    absolute error of 2 ulp of 1 where the float32 formula cancels (1 + erf(x) for negative x,
    e^x - 1 near 0: onnxruntime computes them the same way)."""
    xa = np.concatenate([rng.uniform(-6, 6, 200), rng.uniform(-0.01, 0.01, 50), [0.0, -0.0, 1e-30, -1e-30],
                         [-30.0, -90.0, 30.0, 90.0, -200.0, 200.0], rng.uniform(-3e3, 3e3, 10)]).astype(np.float32)
    xa = np.pad(xa, (0, (-len(xa)) % 16))
    x = te.placeholder(xa.shape, "float32", "x")
    got = compile_run(op(x), [x], [xa])
    with np.errstate(all="ignore"):
        want = ref(xa)
    np.testing.assert_allclose(got, want, rtol=tol, atol=atol)


def test_softplus_tails_keep_their_digits(compile_run):
    """log(1 + e^x) for very negative x is e^x itself, not 0; for large x it is x, not inf."""
    xa = np.float32([-100, -80, -20, -1e-3, 1e-3, 20, 88, 100, 1e30, -1e30, 3e38, np.inf, -np.inf, np.nan, 0, 1])
    x = te.placeholder(xa.shape, "float32", "x")
    got = compile_run(topi.softplus(x), [x], [xa])
    with np.errstate(invalid="ignore"):
        want = _softplus(xa)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-40)  # subnormals have fewer digits


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -1, 1, 2.5, -0.75])
def test_power_literal_exponents(exponent, rng, compile_run):
    x = te.placeholder((4, 19), "float32", "x")
    xa = rng.uniform(0.01, 9, x.shape).astype(np.float32)
    xa[0, :3] = [0, 1, 4]
    got = compile_run(topi.power(x, exponent), [x], [xa])
    with np.errstate(divide="ignore"):
        want = np.power(xa.astype(np.float64), exponent)
    np.testing.assert_allclose(got, want, rtol=3e-7)


def test_power_of_tensors(rng, compile_run):
    a, b = te.placeholder((3, 8), "float32", "a"), te.placeholder((8,), "float32", "b")
    aa = rng.uniform(-3, 3, a.shape).astype(np.float32)
    ba = np.float32([0, 1, 2, 3, -1, 0.5, -2, 1.5])  # negative bases: NaN for the fractional powers
    got = compile_run(topi.power(a, b), [a, b], [aa, ba])
    with np.errstate(invalid="ignore"):
        want = np.power(aa, ba)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("op,ref", [(topi.minimum, np.minimum), (topi.maximum, np.maximum)])
def test_min_max_propagate_nan(op, ref, compile_run):
    """NaN in either operand wins, as in numpy and onnxruntime's Min/Max."""
    aa = np.float32([np.nan, 1, np.nan, -np.inf, 2, -0.0, 5, 3] * 2)
    ba = np.float32([1, np.nan, np.nan, 0, np.inf, 0.0, 5, -3] * 2)
    a, b = te.placeholder(aa.shape, "float32", "a"), te.placeholder(ba.shape, "float32", "b")
    np.testing.assert_array_equal(compile_run(op(a, b), [a, b], [aa, ba]), ref(aa, ba))


@pytest.mark.parametrize("op,ref", [
    (topi.equal, np.equal), (topi.less, np.less), (topi.greater, np.greater),
    (topi.less_equal, np.less_equal), (topi.greater_equal, np.greater_equal),
])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_comparisons_give_bool(op, ref, dtype, rng, compile_run):
    a, b = te.placeholder((3, 1, 17), dtype, "a"), te.placeholder((5, 1), dtype, "b")
    aa, ba = rand(rng, a.shape, dtype, 0, 4), rand(rng, b.shape, dtype, 0, 4)
    if dtype == "float32":
        aa, ba = np.round(aa), np.round(ba)   # ties, so == and <= are exercised
        aa[0, 0, :2] = np.nan
    c = op(a, b)
    assert c.dtype == "bool"
    np.testing.assert_array_equal(compile_run(c, [a, b], [aa, ba]), ref(aa, ba))


def test_prelu_broadcasts_the_slope(rng, compile_run):
    x, s = te.placeholder((2, 3, 4, 5), "float32", "x"), te.placeholder((3, 1, 1), "float32", "s")
    xa, sa = rand(rng, x.shape), rand(rng, s.shape)
    np.testing.assert_array_equal(compile_run(topi.prelu(x, s), [x, s], [xa, sa]), np.where(xa < 0, sa * xa, xa))
    with pytest.raises(ValueError, match="broadcast"):
        topi.prelu(te.placeholder((3,), "float32"), te.placeholder((2, 3), "float32"))
