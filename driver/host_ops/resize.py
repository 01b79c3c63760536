"""Resize (opset 11 and later) of the default ONNX domain: nearest, linear and cubic sampling over
any set of axes, with every coordinate transformation mode.

Sampling is separable: the output along one axis is a weighted sum of input samples along that
axis, so an N-d resize is one 1-d pass per resized axis. Each pass is planned as `taps` (input
indices and weights per output position), which the compiled kernel (vdla.compiler.topi.resize)
also reads to check that its integer index arithmetic picks the same samples.

roi, scales and sizes are operands the output shape depends on, so they must be compile-time
constants. Upsample is not here: onnx deprecated it at opset 10 and vdla imports opset 11 and
later (older models are upgraded by onnx's version converter, which turns it into Resize).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._operands import operand
from .axes import normalize_axes
from .errors import OperandError, Unimplemented
from .opdef import OpDef, dtype_name

MODES = ("nearest", "linear", "cubic")
COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_crop_and_resize", "tf_half_pixel_for_nn")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
POLICIES = ("stretch", "not_larger", "not_smaller")


@dataclass(frozen=True)
class Plan:
    """What a Resize node does to an input shape: per axis of X, the output length, the scale
    the coordinate transformation uses and the roi (start, end); `axes` are the resized ones."""
    axes: tuple
    out_shape: tuple
    scales: tuple
    roi: tuple


def _values(inputs, index, attrs, key):
    """A float operand as a list, None when absent or empty (opset 11 passes an empty scales
    tensor next to sizes)."""
    value = operand(inputs, index, attrs, key)
    if value is None:
        return None
    value = list(np.ravel(value))
    return value or None


def _ambiguous(axis, scale, length, width):
    raise Unimplemented(
        f"Resize: align_corners with scale {scale:.7g} on axis {axis} (length {length}) asks for a fractional output "
        f"length {width:g}; the ONNX specification and onnxruntime divide by the integer output length - 1, "
        "the onnx reference implementation by the fractional one, and vdla does not pick one (give sizes "
        "instead of scales)")


def plan(shape, inputs, attrs) -> Plan:
    rank = len(shape)
    axes = normalize_axes(attrs["axes"], rank, "axes") if attrs.get("axes") else list(range(rank))
    scales, sizes = _values(inputs, 2, attrs, "scales"), _values(inputs, 3, attrs, "sizes")
    if (scales is None) == (sizes is None):
        raise OperandError("Resize needs exactly one of the scales and sizes operands (the other absent "
                           f"or empty), got {'both' if scales else 'neither'}")
    given = scales if scales is not None else sizes
    if len(given) != len(axes):
        raise OperandError(f"{'scales' if scales is not None else 'sizes'} has {len(given)} entries; expected "
                           f"{len(axes)} (one per {'entry of axes' if attrs.get('axes') else 'input axis'})")
    out, axis_scale = list(shape), [1.0] * rank
    if scales is not None:
        if min(scales) <= 0:
            raise OperandError(f"scales {scales} must all be positive")
        for a, s in zip(axes, scales):
            # output length floor(length * scale), the product in float32 as onnxruntime computes it
            width = np.float32(s) * np.float32(shape[a])
            out[a], axis_scale[a] = int(width), float(np.float32(s))
            if attrs.get("coordinate_transformation_mode") == "align_corners" and out[a] != width:
                _ambiguous(a, s, shape[a], float(width))
    else:
        sizes = [int(s) for s in sizes]
        if min(sizes) < 0:
            raise OperandError(f"sizes {sizes} must not be negative")
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        ratios = [float(np.float32(s) / np.float32(shape[a])) if shape[a] else 1.0 for a, s in zip(axes, sizes)]
        if policy == "stretch":
            for a, s, r in zip(axes, sizes, ratios):
                out[a], axis_scale[a] = s, r
        else:
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                out[a], axis_scale[a] = int(math.floor(scale * shape[a] + 0.5)), scale  # round half up
    roi = [(0.0, 1.0)] * rank
    values = _values(inputs, 1, attrs, "roi")
    if attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        if values is None or len(values) != 2 * len(axes):
            raise OperandError(f"roi must hold {2 * len(axes)} values (starts then ends) for "
                               f"tf_crop_and_resize, got {values}")
        for i, a in enumerate(axes):
            roi[a] = (float(values[i]), float(values[len(axes) + i]))
    return Plan(tuple(axes), tuple(out), tuple(axis_scale), tuple(roi))


def source_coordinates(length: int, out_len: int, scale: float, roi, mode: str) -> np.ndarray:
    """x_original of each output position along one axis (the coordinate transformation), in
    float32 like the scales operand: a scale such as 0.7 then lands on the ties and integers the
    model means (3.5 / 0.7 - 0.5 = 4.5), as onnxruntime computes them, where float64 arithmetic
    on the float32 scale would step past them."""
    f = np.float32
    o = np.arange(out_len, dtype=f)
    scale, length_1 = f(scale), f(length - 1)
    if mode == "half_pixel":
        return (o + f(0.5)) / scale - f(0.5)
    if mode == "half_pixel_symmetric":
        width = scale * f(length)  # the fractional output length the scale asks for
        offset = f(length) / f(2) * (f(1) - f(out_len) / width)
        return offset + (o + f(0.5)) / scale - f(0.5)
    if mode == "pytorch_half_pixel":
        return (o + f(0.5)) / scale - f(0.5) if out_len > 1 else np.zeros(out_len, f)
    if mode == "align_corners":
        return o * length_1 / f(out_len - 1) if out_len > 1 else np.zeros(out_len, f)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_half_pixel_for_nn":
        return (o + f(0.5)) / scale
    start, end = f(roi[0]), f(roi[1])
    if out_len > 1:
        return start * length_1 + o * (end - start) * length_1 / f(out_len - 1)
    return np.full(out_len, f(0.5) * (start + end) * length_1, f)


def nearest_index(x: np.ndarray, rounding: str) -> np.ndarray:
    below = np.floor(x)
    frac = x - below
    if rounding == "round_prefer_floor":
        up = frac > 0.5
    elif rounding == "round_prefer_ceil":
        up = frac >= 0.5
    elif rounding == "floor":
        up = np.zeros_like(frac, dtype=bool)
    else:
        up = frac > 0
    return (below + up).astype(np.int64)


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def taps(length: int, out_len: int, scale: float, roi, attrs) -> tuple:
    """(index [out, K], weights [out, K] or None for nearest, extrapolated [out] or None): output
    position o along this axis is sum_k x[index[o, k]] * weights[o, k], or extrapolation_value
    where `extrapolated` (tf_crop_and_resize outside the input)."""
    mode, ctm = attrs.get("mode", "nearest"), attrs.get("coordinate_transformation_mode", "half_pixel")
    x = source_coordinates(length, out_len, scale, roi, ctm)
    outside = (x < 0) | (x > length - 1) if ctm == "tf_crop_and_resize" else None
    if mode == "nearest":
        index = nearest_index(x, attrs.get("nearest_mode", "round_prefer_floor"))
        return np.clip(index, 0, length - 1)[:, None], None, outside
    support = 1.0 if mode == "linear" else 2.0
    # antialias stretches the filter by 1/scale when downsampling: more inputs per output
    stretch = 1.0 / scale if attrs.get("antialias", 0) and scale < 1 else 1.0
    reach = int(math.ceil(support * stretch))
    x = x.astype(np.float64)
    base = np.floor(x).astype(np.int64)
    index = base[:, None] + np.arange(1 - reach, reach + 1)[None, :]
    distance = (index - x[:, None]) / stretch
    weights = np.maximum(1 - np.abs(distance), 0) if mode == "linear" else \
        _cubic(distance, float(attrs.get("cubic_coeff_a", -0.75)))
    if attrs.get("exclude_outside", 0):
        weights = np.where((index < 0) | (index >= length), 0.0, weights)
    if stretch != 1.0 or attrs.get("exclude_outside", 0):
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(index, 0, length - 1), weights, outside


def resize(x: np.ndarray, p: Plan, attrs: dict) -> np.ndarray:
    out = x
    integral = not np.issubdtype(x.dtype, np.floating)
    for a in p.axes:
        length = x.shape[a]
        if p.out_shape[a] == length and p.scales[a] == 1.0 and p.roi[a] == (0.0, 1.0):
            continue  # the identity along this axis in every mode
        index, weights, outside = taps(length, p.out_shape[a], p.scales[a], p.roi[a], attrs)
        if weights is None:
            out = np.take(out, index[:, 0], axis=a)
        else:
            picked = np.take(out.astype(np.float64), index, axis=a)  # [..., out, K, ...]
            shape = [1] * out.ndim + [1]
            shape[a], shape[a + 1] = weights.shape
            out = (picked * weights.reshape(shape)).sum(axis=a + 1)
        if outside is not None and outside.any():
            mask = outside.reshape([-1 if k == a else 1 for k in range(out.ndim)])
            out = np.where(mask, attrs.get("extrapolation_value", 0.0), out)
    if integral and out.dtype != x.dtype:
        # truncated like ONNX's float-to-integer Cast, saturated; rounded to float32 first, the
        # precision of the weights, so that a sum meant to be 7 does not truncate to 6
        info = np.iinfo(x.dtype)
        out = np.clip(np.trunc(out.astype(np.float32)), info.min, info.max)
    return np.asarray(out, dtype=x.dtype)


def _run(inputs, attrs):
    x = inputs[0]
    return [resize(x, plan(x.shape, inputs, attrs), attrs)]


def _types(inputs, attrs):
    x = inputs[0]
    return [(plan(tuple(x.shape), inputs, attrs).out_shape, dtype_name(x))]


def _unsupported(attrs):
    for key, allowed, default in (("mode", MODES, "nearest"),
                                  ("coordinate_transformation_mode", COORDINATES, "half_pixel"),
                                  ("nearest_mode", NEAREST, "round_prefer_floor"),
                                  ("keep_aspect_ratio_policy", POLICIES, "stretch")):
        if attrs.get(key, default) not in allowed:
            return f"{key} {attrs[key]!r} is not supported; supported: {', '.join(allowed)}"
    return None


DEFS: dict[str, OpDef] = {
    "Resize": OpDef(_run, _types, {1: "roi", 2: "scales", 3: "sizes"}, _unsupported),
}
