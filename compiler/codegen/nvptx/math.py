"""The GPU's transcendental functions, written once over exp2, log2 and arithmetic.

Why: the NVPTX backend has no library to call, so LLVM cannot lower llvm.exp, llvm.log,
llvm.tanh or llvm.pow there (it stops the whole process: "no libcall available for fexp"), and
vdla does not link NVIDIA's libdevice. The hardware has ex2.approx.f32 and lg2.approx.f32
(about 2 ulp); the rest is built from them here:
- exp: range reduction x = n*ln2 + r (n integral, |r| <= ln2/2, Cody-Waite constants so n*C1 is
  exact), exp(x) = 2^n * 2^(r*log2 e): about 3 ulp, where ex2(x*log2 e) alone loses |x| ulp.
  x is clamped to [-104, 89] first: outside, float32's exp is 0 or inf (and exp(-inf) stays 0,
  not NaN); 2^n is applied in two factors, as 2^128 alone overflows where the result does not;
- log = lg2 * ln2 (absolute error about 1e-7, so poor relative accuracy next to 1);
- tanh: an odd Taylor polynomial below |x| = 0.25, where (1 - e)/(1 + e), e = exp(-2|x|), the
  form used above it, would cancel; sigmoid = 1 / (1 + e) or e / (1 + e), e = exp(-|x|);
- erf: Taylor series below |x| = 0.5, Abramowitz & Stegun 7.1.26 above (absolute error < 1.5e-7);
- pow(x, y) = 2^(y lg2|x|), negated for x < 0 and odd integral y, NaN for x < 0 and fractional
  y, 1 for y = 0.
Each formula is a function of a backend `m` (constants, select, fabs, floor, round, exp2, log2,
min, max) and values with arithmetic and comparison operators: NumpyMath evaluates them in
float32 (tests check them against numpy's functions), the NVPTX code generator builds LLVM IR
with them (llvm_math.py). Only float32: the approximate instructions exist for float32 only.
"""
from __future__ import annotations

import math

import numpy as np

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
LN2_C1, LN2_C2 = 0.693359375, 2.12194440e-4   # ln2 = C1 - C2; C1 = 355/512 has 9 significant bits
EXP_LO, EXP_HI = -104.0, 89.0

TANH_TAYLOR = (-1 / 3, 2 / 15, -17 / 315, 62 / 2835)
ERF_TAYLOR = tuple(c * 2 / math.sqrt(math.pi) for c in (1, -1 / 3, 1 / 10, -1 / 42, 1 / 216, -1 / 1320))
ERF_AS_P = 0.3275911
ERF_AS = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def horner(m, z, coeffs):
    """coeffs[0] + z*(coeffs[1] + z*(...))."""
    out = m.c(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        out = m.c(c) + z * out
    return out


def exp(m, x):
    x = m.max(m.min(x, m.c(EXP_HI)), m.c(EXP_LO))
    n = m.round(x * m.c(LOG2E))
    r = (x - n * m.c(LN2_C1)) + n * m.c(LN2_C2)
    half = m.floor(n * m.c(0.5))
    return m.exp2(half) * m.exp2(r * m.c(LOG2E)) * m.exp2(n - half)


def log(m, x):
    return m.log2(x) * m.c(LN2)


def tanh(m, x):
    ax = m.fabs(x)
    z = x * x
    small = x + x * z * horner(m, z, TANH_TAYLOR)
    e = exp(m, m.c(-2.0) * ax)
    large = (m.c(1.0) - e) / (m.c(1.0) + e)
    large = m.select(x < m.c(0.0), m.c(0.0) - large, large)
    return m.select(ax < m.c(0.25), small, large)


def sigmoid(m, x):
    e = exp(m, m.c(0.0) - m.fabs(x))        # in (0, 1]: no overflow, and tiny results stay exact
    return m.select(x < m.c(0.0), e / (m.c(1.0) + e), m.c(1.0) / (m.c(1.0) + e))


def erf(m, x):
    ax = m.fabs(x)
    z = x * x
    taylor = x * horner(m, z, ERF_TAYLOR)
    t = m.c(1.0) / (m.c(1.0) + m.c(ERF_AS_P) * ax)
    big = m.c(1.0) - t * horner(m, t, ERF_AS) * exp(m, m.c(0.0) - z)
    big = m.select(x < m.c(0.0), m.c(0.0) - big, big)
    return m.select(ax < m.c(0.5), taylor, big)


def pow_(m, x, y):
    mag = m.exp2(y * m.log2(m.fabs(x)))
    integral = m.floor(y) == y
    odd = integral & (m.floor(y * m.c(0.5)) * m.c(2.0) != y)
    negative = x < m.c(0.0)
    out = m.select(negative & odd, m.c(0.0) - mag, mag)
    out = m.select(negative & ~integral, m.c(float("nan")), out)
    return m.select(y == m.c(0.0), m.c(1.0), out)


FORMULAS = {"exp": exp, "exp_nonpositive": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid, "erf": erf, "pow": pow_}


class NumpyMath:
    """The formulas' backend in numpy float32, with exact exp2/log2 (the device's are ~2 ulp)."""

    def c(self, v):
        return np.float32(v)

    def select(self, cond, t, f):
        return np.where(cond, t, f).astype(np.float32)

    def fabs(self, x):
        return np.abs(x)

    def floor(self, x):
        return np.floor(x)

    def round(self, x):
        return np.rint(x)

    def exp2(self, x):
        return np.exp2(x)

    def log2(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log2(x)

    def min(self, a, b):
        return np.minimum(a, b)

    def max(self, a, b):
        return np.maximum(a, b)


def evaluate(name, *args):
    """A formula on float32 numpy arrays (what the GPU computes, but for exp2/log2's rounding)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return FORMULAS[name](NumpyMath(), *[np.asarray(a, np.float32) for a in args])
