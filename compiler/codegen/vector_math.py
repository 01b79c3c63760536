"""exp, erf and tanh of float32 vectors as straight-line LLVM IR (polynomials and bit arithmetic).

Why: LLVM lowers llvm.exp of a vector, and vdla's erf (libm's erff), to one scalar libm call
per lane; a softmax or an exporter's GELU then spends most of its time in those calls (ViT-Tiny:
GELU and softmax a third of the run). These forms vectorize like any arithmetic.

- exp: x clamped to [-104, 89] (outside, float32's exp is 0 or inf), x = n ln2 + r with
  Cody-Waite constants (n C1 exact), e^r by Cephes' expf polynomial on |r| <= ln2/2, times
  2^n built in the exponent bits, in two factors (2^n alone overflows or underflows where the
  result does not): within 1e-7 relative of float64's exp. NaN in, NaN out.
- exp_nonpositive: exp for x <= 0, as softmax takes it (x - the row's max): x clamped below only,
  2^n in one factor (n >= -126), and 0 where the result would be subnormal (x < ln 2^-126,
  which a softmax's sum of at least 1 cannot tell from 0): no upper clamp, one power of two
  instead of two. Equal to exp elsewhere. NaN in, NaN out; a positive x is outside its domain.
- erf: x P(x^2) below |x| = 1; 1 - T(u), u = (|x| - 2.5) / 1.5, from there to 4, above which
  float32's erf is 1. P (degree 6) is a least-squares fit to float64's erf (relative error
  1.4e-9 before rounding), T (degree 16) a Chebyshev least-squares fit to erfc over [1, 4]
  (absolute error 2.3e-9 before rounding; evaluated by Estrin's scheme in float32, 1 + erf(x) of
  a negative x, a GELU's tail, is within 1.1e-7 of erfc(|x|): 1.03e-7 at most on a grid over
  [-4, -1], 9.6e-8 by Horner's rule). No exp: an earlier e^(-x^2) Q(u)
  for erfc spent half an erf's time in its exp. Evaluated with fused multiply-adds, within 2e-7
  relative of float64's erf.
- tanh: x + x^3 P(x^2) below |x| = 0.625 (Cephes' tanhf polynomial), 1 - 2 / (e^(2|x|) + 1) with
  x's sign from there (e^(2|x|) overflowing to infinity gives 1, as it should); within 3e-7 of
  float64's tanh. An LSTM's cell and the GELU that exporters write with tanh vectorize with it.
"""
from __future__ import annotations

import math
import struct

from llvmlite import ir

LOG2E = 1.4426950408889634
LN2_C1, LN2_C2 = 0.693359375, -2.12194440e-4      # ln2 = C1 + C2; C1 has 9 significant bits
EXP_LO, EXP_HI = -104.0, 89.0
EXP_NORMAL_LO = math.log(2.0 ** -126)              # exp below it is subnormal
ROUNDER = 1.5 * 2 ** 23
ROUNDER_BITS = struct.unpack("<I", struct.pack("<f", ROUNDER))[0]   # its float32 bits
EXP_POLY = (5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3,
            1.9875691500e-4)                       # e^r = 1 + r + r^2 (c0 + c1 r + ...), Cephes
ERF_P = (1.1283791665105323, -0.37612628842481627, 0.11283612402789911, -0.026854807016302728,
         0.005190049964473091, -0.0008024316633195435, 7.898068540251348e-05)
ERFC_TAIL = (0.0004069521072100381, -0.003267420119131073, 0.0122528332530304, -0.02818186775660613,
             0.04365121582991293, -0.0464489758497413, 0.0318717132492004, -0.009298023009071196,
             -0.006654087464704142, 0.009727173580654072, -0.004626792399247157, -0.0006495940827652221,
             0.0019799441480800976, -0.0006889500190197922, -0.00022281322060936566, 0.00015806327903198568,
             -9.35470012231205e-06)   # erfc in u = (|x| - 2.5) / 1.5 over [1, 4], lowest order first
ERF_SPLIT, ERF_ONE = 1.0, 4.0
TANH_P = (-3.33332819422e-1, 1.33314422036e-1, -5.37397155531e-2, 2.06390887954e-2,
          -5.70498872745e-3)               # tanh x = x + x^3 P(x^2), Cephes, lowest order first
TANH_SPLIT = 0.625

FUNCTIONS = ("exp", "exp_nonpositive", "erf", "tanh")
# Horner's rule is a chain of one dependent multiply-add per coefficient, which bounds a loop of
# these functions by latency rather than throughput once the chain is long: with Estrin's
# scheme for erf's 17-coefficient tail, a GELU over [12, 197, 768] took 2.30 ms instead of 2.85
# (Zen 3, one thread). The short polynomials (exp's 6, erf's 7, tanh's 5) gained nothing.
ESTRIN_ABOVE = 8


class VectorMath:
    """Builds the functions for one vector type <lanes x float> at builder `b`; `intrinsic`
    (name, [types]) -> the declared LLVM intrinsic."""

    def __init__(self, b: ir.IRBuilder, vtype: ir.VectorType, intrinsic):
        self.b, self.t, self._intrinsic = b, vtype, intrinsic
        self.it = ir.VectorType(ir.IntType(32), vtype.count)

    def c(self, v: float):
        return ir.Constant(self.t, [float(v)] * self.t.count)

    def ci(self, v: int):
        return ir.Constant(self.it, [int(v)] * self.t.count)

    def call(self, name: str, *args):
        return self.b.call(self._intrinsic(name, [self.t], nargs=len(args)), list(args))

    def fma(self, a, b, c):
        return self.call("llvm.fma", a, b, c)

    def horner(self, z, coeffs):
        """sum coeffs[k] z^k (lowest order first): Horner's rule, or Estrin's scheme above
        ESTRIN_ABOVE coefficients."""
        if len(coeffs) > ESTRIN_ABOVE:
            return self.estrin(z, coeffs)
        out = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            out = self.fma(out, z, self.c(k))
        return out

    def estrin(self, z, coeffs):
        """The polynomial as a tree: pairs c0 + c1 z, then pairs of those with z^2, z^4, ...
        A degree-16 polynomial takes 5 dependent multiply-adds instead of Horner's 16."""
        terms = [self.fma(self.c(coeffs[k + 1]), z, self.c(coeffs[k])) if k + 1 < len(coeffs)
                 else self.c(coeffs[k]) for k in range(0, len(coeffs), 2)]
        power = self.b.fmul(z, z)
        while len(terms) > 1:
            terms = [self.fma(terms[k + 1], power, terms[k]) if k + 1 < len(terms) else terms[k]
                     for k in range(0, len(terms), 2)]
            if len(terms) > 1:
                power = self.b.fmul(power, power)
        return terms[0]

    def minimum(self, a, b):       # NaN operands come out as NaN (unordered compare)
        return self.b.select(self.b.fcmp_unordered("<", a, b), a, b)

    def maximum(self, a, b):
        return self.b.select(self.b.fcmp_unordered(">", a, b), a, b)

    def _pow2(self, n):
        """2^n for integer n in [-126, 127], as exponent bits."""
        return self.b.bitcast(self.b.shl(self.b.add(n, self.ci(127)), self.ci(23)), self.t)

    def _exp_reduced(self, xc):
        """e^xc as (e^r, n) with xc = n ln2 + r, n an integer as int32 lanes."""
        b = self.b
        # n = x log2 e rounded to nearest even by adding 1.5 * 2^23 (|x log2 e| <= 150), which
        # leaves n as an integer in t's low mantissa bits (llvm.roundeven is a libm call on
        # targets without the instruction: ARMv7's glibc has none)
        t = self.fma(xc, self.c(LOG2E), self.c(ROUNDER))
        n = b.fsub(t, self.c(ROUNDER))
        r = self.fma(n, self.c(-LN2_C1), xc)
        r = self.fma(n, self.c(-LN2_C2), r)
        y = self.fma(b.fmul(self.horner(r, EXP_POLY), r), r, b.fadd(r, self.c(1.0)))
        return y, b.sub(b.bitcast(t, self.it), self.ci(ROUNDER_BITS))

    def exp(self, x):
        b = self.b
        # the clamps' unordered compares keep a NaN, which every later step carries to the result
        y, n = self._exp_reduced(self.maximum(self.minimum(x, self.c(EXP_HI)), self.c(EXP_LO)))
        half = b.ashr(n, self.ci(1))
        return b.fmul(b.fmul(y, self._pow2(half)), self._pow2(b.sub(n, half)))

    def exp_nonpositive(self, x):
        b = self.b
        y, n = self._exp_reduced(self.maximum(x, self.c(EXP_NORMAL_LO)))     # n in [-126, 0]
        y = b.fmul(y, self._pow2(n))
        return b.select(b.fcmp_ordered("<", x, self.c(EXP_NORMAL_LO)), self.c(0.0), y)

    def erf(self, x):
        b = self.b
        ax = self.call("llvm.fabs", x)
        z = b.fmul(x, x)
        small = b.fmul(x, self.horner(z, ERF_P))
        # |x| clamped to the fit's interval: outside it the result is selected from elsewhere
        u = self.fma(self.minimum(ax, self.c(ERF_ONE)), self.c(1 / 1.5), self.c(-2.5 / 1.5))
        tail = self.horner(u, ERFC_TAIL)
        big = b.select(b.fcmp_ordered(">=", ax, self.c(ERF_ONE)), self.c(1.0), b.fsub(self.c(1.0), tail))
        big = self.call("llvm.copysign", big, x)
        # NaN: |x| < 1 is false, and big is NaN (1 - T(NaN)): NaN, as erf(NaN)
        return b.select(b.fcmp_ordered("<", ax, self.c(ERF_SPLIT)), small, big)

    def tanh(self, x):
        b = self.b
        ax = self.call("llvm.fabs", x)
        z = b.fmul(x, x)
        small = self.fma(b.fmul(x, z), self.horner(z, TANH_P), x)
        e = self.exp(b.fadd(ax, ax))
        big = b.fsub(self.c(1.0), b.fdiv(self.c(2.0), b.fadd(e, self.c(1.0))))
        # x's sign on both (tanh(-0) is -0); NaN: the compare is false and big is NaN
        return self.call("llvm.copysign", b.select(b.fcmp_ordered("<", ax, self.c(TANH_SPLIT)), small, big), x)


def vector_math(b: ir.IRBuilder, name: str, arg, intrinsic):
    """name(arg) for a <n x float> arg, or None where this module has no vector form (scalars,
    other element types, other functions): the caller keeps its own lowering then."""
    t = arg.type
    if name not in FUNCTIONS or not isinstance(t, ir.VectorType) or not isinstance(t.element, ir.FloatType):
        return None
    return getattr(VectorMath(b, t, intrinsic), name)(arg)
