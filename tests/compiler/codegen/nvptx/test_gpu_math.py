"""The GPU's exp, tanh, sigmoid, erf, log and pow (math.py's formulas over exp2/log2, evaluated
in float32 with exact exp2/log2) against numpy in float64, over their whole float32 range."""
import math

import numpy as np
import pytest

from vdla.compiler.codegen.nvptx.math import evaluate

X = np.concatenate([np.linspace(-110, 95, 400_001), [0.0, -0.0, 1e-30, -1e-30, 88.72, -87.33, -103.9]]).astype("float32")


def ulps(got, want):
    """Error in units of the float32 spacing at the true value (finite, nonzero values)."""
    with np.errstate(over="ignore"):
        want32 = want.astype("float32")
    keep = np.isfinite(want32) & (want32 != 0)
    return np.max(np.abs(got[keep].astype("float64") - want[keep]) / np.spacing(np.abs(want32[keep])))


def test_exp_is_within_2_ulp_and_saturates_like_float32():
    want = np.exp(X.astype("float64"))
    got = evaluate("exp", X)
    assert ulps(got, want) <= 2
    np.testing.assert_array_equal(got[want > np.finfo("float32").max], np.inf)   # beyond 88.72
    assert np.all(got[X < -104] == 0)
    np.testing.assert_array_equal(evaluate("exp", [-np.inf, np.inf, np.nan]), [0, np.inf, np.nan])


@pytest.mark.parametrize("name,reference", [
    ("tanh", np.tanh),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
])
def test_tanh_and_sigmoid_are_within_4_ulp(name, reference):
    with np.errstate(over="ignore"):
        want = reference(X.astype("float64"))
    assert ulps(evaluate(name, X), want) <= 4


def test_tanh_of_tiny_arguments_keeps_its_relative_accuracy():
    x = np.float32([1e-3, -2e-5, 0.2, 0.2499, 0.2501])
    np.testing.assert_allclose(evaluate("tanh", x), np.tanh(x.astype("float64")), rtol=3e-7)


def test_erf_is_within_3e7():
    want = np.array([math.erf(v) for v in X[::7].astype("float64")])
    assert np.max(np.abs(evaluate("erf", X[::7]) - want)) < 3e-7
    np.testing.assert_allclose(evaluate("erf", [1e-4, -0.3]), [math.erf(1e-4), math.erf(-0.3)], rtol=3e-7)


def test_log_is_within_5e7_absolute():
    x = np.abs(X) + np.float32(1e-3)
    assert np.max(np.abs(evaluate("log", x) - np.log(x.astype("float64")))) < 5e-7


def test_pow_follows_numpy_for_every_sign():
    base = np.linspace(-3, 3, 61, dtype="float32")
    exps = np.float32([0, 1, 2, 3, -1, 0.5, -2.5, 7])
    x, y = np.meshgrid(base, exps)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.power(x.astype("float64"), y)
    got = evaluate("pow", x, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-6, atol=1e-7)
