"""ONNX Resize over the H and W axes of an NCHW tensor, nearest and linear, as one injective
compute: each output element reads its input samples at indices that integer arithmetic
computes from its own coordinates.

Along one axis the source coordinate of output position o is affine, x = (o*P + Q) / R with
integers P, Q, R (the scale as a small fraction); nearest rounding folds into the same form,
so a sample index is one floor division, clamped to the axis. The host op
(vdla.driver.host_ops.resize) states the semantics in float32 arithmetic; `axis_map` derives
the integer form from the same attributes and checks it against the host op's index table, so
the kernel and the host step pick the same samples (the linear weights agree to rounding).
Anything outside that (cubic, antialias, tf_crop_and_resize, a scale with no small fraction)
is refused with ValueError and stays a host step.
"""
from __future__ import annotations

from fractions import Fraction
from math import lcm

import numpy as np

from vdla.driver.host_ops import resize as onnx_resize

from .. import te
from ..tir import expr as E
from . import tags

_INT32 = 2**31 - 1


def _source_affine(length: int, out_len: int, scale: float, mode: str) -> tuple[Fraction, Fraction]:
    """x_original = A*o + B exactly, for the scale read as the small fraction it stands for."""
    s = Fraction(scale).limit_denominator(1 << 12)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and out_len <= 1:
            return Fraction(0), Fraction(0)
        return 1 / s, 1 / (2 * s) - Fraction(1, 2)
    if mode == "half_pixel_symmetric":
        offset = Fraction(length, 2) * (1 - Fraction(out_len) / (s * length))
        return 1 / s, offset + 1 / (2 * s) - Fraction(1, 2)
    if mode == "align_corners":
        return (Fraction(length - 1, out_len - 1), Fraction(0)) if out_len > 1 else (Fraction(0), Fraction(0))
    if mode == "asymmetric":
        return 1 / s, Fraction(0)
    if mode == "tf_half_pixel_for_nn":
        return 1 / s, 1 / (2 * s)
    raise ValueError(f"coordinate_transformation_mode {mode!r} has no kernel")


def axis_map(length: int, out_len: int, scale: float, attrs: dict) -> tuple[int, int, int]:
    """(P, Q, R): nearest: sample index clamp((o*P + Q) // R); linear: coordinate (o*P + Q) / R."""
    mode, ctm = attrs.get("mode", "nearest"), attrs.get("coordinate_transformation_mode", "half_pixel")
    a, b = _source_affine(length, out_len, scale, ctm)
    r = lcm(a.denominator, b.denominator)
    p, q = int(a * r), int(b * r)
    o = np.arange(out_len, dtype=np.int64)
    want_x = onnx_resize.source_coordinates(length, out_len, scale, (0.0, 1.0), ctm)
    if mode == "nearest":
        rounding = attrs.get("nearest_mode", "round_prefer_floor")
        # floor(x), ceil(x) = floor((N + R - 1) / R), floor(x + 1/2), ceil(x - 1/2) over N = o*P + Q
        p, q, r = {"floor": (p, q, r), "ceil": (p, q + r - 1, r), "round_prefer_ceil": (2 * p, 2 * q + r, 2 * r),
                   "round_prefer_floor": (2 * p, 2 * q + r - 1, 2 * r)}[rounding]
        want = np.clip(onnx_resize.nearest_index(want_x, rounding), 0, length - 1)
        if not np.array_equal(np.clip((o * p + q) // r, 0, length - 1), want):
            raise ValueError(f"Resize scale {scale} has no exact integer form for {ctm}/{rounding}")
    elif not np.allclose((o * p + q) / r, want_x, rtol=1e-6, atol=1e-5):
        raise ValueError(f"Resize scale {scale} has no small-fraction form for {ctm}")
    if max(abs(q), abs((out_len - 1) * p + q), r) > _INT32 // 2:
        raise ValueError(f"Resize index arithmetic for scale {scale} overflows int32")
    return p, q, r


def _clamped(num, lo: int, hi: int, length: int):
    """num clamped to [0, length-1], where lo..hi is the range num takes."""
    if lo < 0:
        num = E.max_expr(num, 0)
    if hi > length - 1:
        num = E.min_expr(num, length - 1)
    return num


def _floor_index(o, pqr, out_len: int, length: int, shift: int = 0):
    """clamp((o*P + Q) // R + shift) over o in [0, out_len), with the clamps it can need."""
    p, q, r = pqr
    q += shift * r
    num = o if p == 1 else o * p
    num = num + q if q else num
    index = num // r if r != 1 else num
    return _clamped(index, q // r, ((out_len - 1) * p + q) // r, length)


def resize_nchw(x, attrs: dict):
    """Resize (attrs: the ONNX node's, with scales/sizes/roi as attributes) of a 4-D NCHW `x`
    over H and W."""
    if x.ndim != 4:
        raise ValueError(f"Resize kernels are 4-D NCHW (got {x.ndim}-D)")
    mode = attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise ValueError(f"Resize mode {mode!r} has no kernel")
    if mode == "linear" and x.dtype != "float32":
        raise ValueError(f"linear Resize kernels are float32 (got {x.dtype})")
    plan = onnx_resize.plan(tuple(x.shape), [], attrs)
    if plan.out_shape[:2] != tuple(x.shape[:2]):
        raise ValueError("Resize kernels resize H and W only")
    if mode == "linear" and attrs.get("antialias", 0) and min(plan.scales[2:]) < 1:
        raise ValueError("antialiased downsampling has no kernel")
    (h, w), (oh, ow) = x.shape[2:], plan.out_shape[2:]
    maps = [axis_map(n, on, s, attrs) for n, on, s in zip((h, w), (oh, ow), plan.scales[2:])]

    if mode == "nearest":
        def nearest(n, c, oy, ox):
            return x(n, c, _floor_index(oy, maps[0], oh, h), _floor_index(ox, maps[1], ow, w))
        return te.compute(plan.out_shape, nearest, name="resize_nearest", tag=tags.INJECTIVE)

    def taps(o, pqr, out_len, length):
        """[(index, weight expr or None)]: one tap where the coordinate is always an integer."""
        p, q, r = pqr
        i0 = _floor_index(o, pqr, out_len, length)
        if r == 1:
            return [(i0, None)]
        frac = te.cast("float32", (o * p + q) % r) * E.const(1.0 / r, "float32")
        return [(i0, 1.0 - frac), (_floor_index(o, pqr, out_len, length, shift=1), frac)]

    def linear(n, c, oy, ox):
        total = None
        for iy, wy in taps(oy, maps[0], oh, h):
            row = None
            for ix, wx in taps(ox, maps[1], ow, w):
                term = x(n, c, iy, ix) if wx is None else x(n, c, iy, ix) * wx
                row = term if row is None else row + term
            term = row if wy is None else row * wy
            total = term if total is None else total + term
        return total
    return te.compute(plan.out_shape, linear, name="resize_linear", tag=tags.INJECTIVE)
