"""The vector forms of exp, erf and tanh (codegen/vector_math.py): vectorized kernels call no libm
function per lane, and agree with float64's functions to float32 precision over the whole
range, at the special values and where the results go subnormal, zero or infinite."""
import math

import numpy as np
import pytest

from vdla.compiler import build, te, topi
from vdla.compiler.target import Target


@pytest.fixture(scope="module")
def host():
    return Target.host(threads=1)


def _run(host, fn, xa):
    x = te.placeholder(xa.shape, "float32", "x")
    y = fn(x)
    kernel = build(topi.schedule_for([y], host), [x, y], host, "k", check=True)
    out = np.zeros(xa.shape, np.float32)
    kernel.load().run("k", [xa, out])
    return kernel, out


def _inputs(rng, lo, hi):
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-45, 3e38, -3e38]
    xa = np.concatenate([rng.uniform(lo, hi, 4000), rng.uniform(-1, 1, 500), special]).astype(np.float32)
    return np.pad(xa, (0, (-len(xa)) % 64))       # whole vectors: no scalar tail


def test_exp_is_vectorized_and_within_float32_rounding(host, rng):
    xa = _inputs(rng, -110, 95)
    xa[:8] = [88.7, 88.8, -87.3, -100.0, -103.9, -104.5, 89.5, 0.5]
    kernel, got = _run(host, topi.exp, xa)
    assert "expf" not in kernel.llvm_ir and "llvm.exp" not in kernel.llvm_ir
    with np.errstate(over="ignore"):
        want = np.exp(xa.astype(np.float64))
    over = want > np.finfo(np.float32).max
    assert np.isposinf(got[over]).all()
    normal = (want >= np.finfo(np.float32).tiny) & ~over
    np.testing.assert_allclose(got[normal], want[normal], rtol=2e-7)
    # subnormal results: within one float32 subnormal step; zero and inf where float32 has them
    np.testing.assert_allclose(got[~normal & ~over], want[~normal & ~over], rtol=0, atol=1.5e-45)
    assert np.isnan(got[np.isnan(xa)]).all()


def test_exp_nonpositive_is_exp_down_to_the_normal_range_then_zero(host, rng):
    """exp_nonpositive (softmax's exp of x - max): float64's exp within 2e-7 wherever the result
    is a normal float32, exactly 0 below ln 2^-126 (-inf: a masked score), NaN for NaN."""
    xa = _inputs(rng, -110, 0)
    xa = np.where(xa > 0, -xa, xa)
    xa[:8] = [-87.33654, -87.3366, -87.33, -1e-30, -0.0, -np.inf, np.nan, -103.9]
    kernel, got = _run(host, lambda x: te.compute(x.shape, lambda i: te.call("exp_nonpositive", x[i]), "e"), xa)
    assert "expf" not in kernel.llvm_ir and "llvm.exp" not in kernel.llvm_ir
    want = np.exp(xa.astype(np.float64))
    normal = want >= np.finfo(np.float32).tiny
    np.testing.assert_allclose(got[normal], want[normal], rtol=2e-7)
    assert (got[~normal & ~np.isnan(xa)] == 0).all() and (~normal & (xa == -np.inf)).any()
    assert np.isnan(got[np.isnan(xa)]).all()


def test_erf_is_vectorized_and_within_float32_rounding(host, rng):
    xa = _inputs(rng, -6, 6)
    xa[:6] = [0.99999994, 1.0, 1.0000001, 3.9999998, 4.0, -4.0]   # either side of the formulas' joins
    kernel, got = _run(host, topi.erf, xa)
    assert "erff" not in kernel.llvm_ir
    finite = ~np.isnan(xa)
    want = np.vectorize(math.erf)(xa[finite].astype(np.float64))
    np.testing.assert_allclose(got[finite], want, rtol=2e-7, atol=1e-38)
    assert np.isnan(got[~finite]).all()
    assert np.signbit(got[xa == 0]).tolist() == np.signbit(xa[xa == 0]).tolist()   # erf(-0) = -0


def test_tanh_is_vectorized_and_within_float32_rounding(host, rng):
    xa = _inputs(rng, -12, 12)
    xa[:8] = [0.62499994, 0.625, 0.62500006, -0.625, 44.4, 45.0, -46.0, 1e-4]  # the join; e^(2|x|) overflows
    kernel, got = _run(host, topi.tanh, xa)
    assert "tanhf" not in kernel.llvm_ir and "llvm.tanh" not in kernel.llvm_ir
    finite = ~np.isnan(xa)
    want = np.tanh(xa[finite].astype(np.float64))
    np.testing.assert_allclose(got[finite], want, rtol=3e-7, atol=1e-38)
    assert np.isnan(got[~finite]).all()
    assert np.signbit(got[xa == 0]).tolist() == np.signbit(xa[xa == 0]).tolist()   # tanh(-0) = -0


def test_scalar_tails_keep_libm(host, rng):
    """A length that leaves scalar lanes: those call libm; all lanes agree with float64."""
    xa = rng.uniform(-5, 5, 37).astype(np.float32)
    kernel, got = _run(host, topi.erf, xa)
    np.testing.assert_allclose(got, np.vectorize(math.erf)(xa.astype(np.float64)), rtol=2e-7, atol=1e-38)


def test_one_plus_erf_of_a_negative_x_is_erfc_within_the_stated_bound(host):
    """A GELU's tail, 1 + erf(x) for x in [-4, -1], where erf's long tail polynomial (Estrin's
    scheme) decides: within 1.1e-7 of float64's erfc(|x|), as the module says."""
    xa = np.linspace(-4, -1, 64 * 500).astype(np.float32)
    _, got = _run(host, topi.erf, xa)
    want = np.vectorize(math.erfc)(-xa.astype(np.float64))
    assert np.abs(1.0 + got.astype(np.float64) - want).max() <= 1.1e-7
