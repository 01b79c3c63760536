"""Normalization operators of the default ONNX domain: LayerNormalization, GroupNormalization,
InstanceNormalization, RMSNormalization, LpNormalization, LRN and MeanVarianceNormalization.

The statistics (stage one) are computed in float32 at least: the ops with a stash_type say so,
and for float16 inputs float32 keeps the variance from losing the digits the result needs."""
from __future__ import annotations

import numpy as np

from .axes import normalize_axes, normalize_axis
from .errors import OperandError
from .opdef import OpDef, broadcast_shape, dtype_name


def _stash_unsupported(attrs):
    if attrs.get("stash_type", 1) != 1:
        return f"stash_type {attrs['stash_type']} is not supported; supported: 1 (float32 statistics)"
    return None


def _stage_dtype(dtype) -> np.dtype:
    return np.promote_types(dtype, np.float32)


def _fits(what: str, param, x_shape) -> None:
    """`param` broadcasts to x's shape without growing it (ONNX unidirectional broadcasting)."""
    if param is not None and broadcast_shape(x_shape, param.shape) != tuple(x_shape):
        raise OperandError(f"{what} {list(param.shape)} does not broadcast to the input shape {list(x_shape)}")


def _trailing_axes(x, attrs) -> tuple:
    return tuple(range(normalize_axis(attrs["axis"], x.ndim), x.ndim))


# -- LayerNormalization / RMSNormalization: over the axes from `axis` to the last ------------------

def _layer_norm(inputs, attrs):
    x, scale = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    axes = _trailing_axes(x, attrs)
    xs = x.astype(np.float32)
    mean = xs.mean(axis=axes, keepdims=True)
    centered = xs - mean
    inv_std = np.float32(1) / np.sqrt((centered * centered).mean(axis=axes, keepdims=True)
                                      + np.float32(attrs["epsilon"]))
    y = (centered * inv_std).astype(x.dtype) * scale
    if bias is not None:
        y = y + bias
    return [y.astype(x.dtype), mean, inv_std]


def _layer_norm_types(inputs, attrs):
    x = inputs[0]
    axes = _trailing_axes(x, attrs)
    _fits("Scale", inputs[1], x.shape)
    _fits("B", inputs[2] if len(inputs) > 2 else None, x.shape)
    stats = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return [(tuple(x.shape), dtype_name(x)), (stats, "float32"), (stats, "float32")]


def _rms_norm(inputs, attrs):
    x, scale = inputs[0], inputs[1]
    axes = _trailing_axes(x, attrs)
    xs = x.astype(np.float32)
    rms = np.sqrt((xs * xs).mean(axis=axes, keepdims=True) + np.float32(attrs["epsilon"]))
    return [((xs / rms).astype(x.dtype) * scale).astype(scale.dtype)]


def _rms_norm_types(inputs, attrs):
    x, scale = inputs[0], inputs[1]
    _trailing_axes(x, attrs)
    _fits("scale", scale, x.shape)
    return [(tuple(x.shape), dtype_name(scale))]


# -- per (instance, channel group): GroupNormalization, InstanceNormalization ----------------------

def _standardize_groups(x, groups: int, epsilon: float):
    """x [N, C, ...] standardized over each group of C/groups channels and all spatial dims."""
    xs = x.astype(_stage_dtype(x.dtype)).reshape(x.shape[0], groups, int(np.prod(x.shape[1:])) // groups)
    centered = xs - xs.mean(axis=2, keepdims=True)
    var = (centered * centered).mean(axis=2, keepdims=True)
    return (centered / np.sqrt(var + xs.dtype.type(epsilon))).reshape(x.shape)


def _per_channel(param, x):
    return param.reshape((1, -1) + (1,) * (x.ndim - 2))


def group_param_len(x_shape, attrs) -> int:
    """Opset 21 gives scale and bias per channel; opset 18 (no stash_type attribute) per group."""
    return x_shape[1] if "stash_type" in attrs else attrs["num_groups"]


def _group_norm(inputs, attrs):
    x, scale, bias = inputs[0], inputs[1], inputs[2]
    groups = attrs["num_groups"]
    y = _standardize_groups(x, groups, attrs["epsilon"]).astype(x.dtype)
    if group_param_len(x.shape, attrs) != x.shape[1]:     # per group: one value for its channels
        scale, bias = (np.repeat(p, x.shape[1] // groups) for p in (scale, bias))
    return [(y * _per_channel(scale, x) + _per_channel(bias, x)).astype(x.dtype)]


def _check_channel_params(x, params, length: int, what: str) -> None:
    if x.ndim < 2:
        raise OperandError(f"the input {list(x.shape)} needs a batch and a channel axis (rank >= 2)")
    for name, p in params:
        if tuple(p.shape) != (length,):
            raise OperandError(f"{name} {list(p.shape)} must have shape [{length}] ({what})")


def _group_norm_types(inputs, attrs):
    x = inputs[0]
    groups = attrs["num_groups"]
    if x.ndim < 2 or groups < 1 or x.shape[1] % groups:
        raise OperandError(f"num_groups {groups} must be positive and divide the channels of the input "
                           f"{list(x.shape)}")
    length = group_param_len(x.shape, attrs)
    _check_channel_params(x, [("scale", inputs[1]), ("bias", inputs[2])], length,
                          "one value per channel" if "stash_type" in attrs else "one value per group (opset 18)")
    return [(tuple(x.shape), dtype_name(x))]


def _instance_norm(inputs, attrs):
    x, scale, bias = inputs
    y = _standardize_groups(x, x.shape[1], attrs["epsilon"])
    return [(y * _per_channel(scale, x) + _per_channel(bias, x)).astype(x.dtype)]


def _instance_norm_types(inputs, attrs):
    x = inputs[0]
    _check_channel_params(x, [("scale", inputs[1]), ("B", inputs[2])], x.shape[1] if x.ndim >= 2 else 0,
                          "one value per channel")
    return [(tuple(x.shape), dtype_name(x))]


# -- LpNormalization, LRN, MeanVarianceNormalization ----------------------------------------------

def _check_p(attrs) -> None:
    if attrs["p"] not in (1, 2):
        raise OperandError(f"p {attrs['p']}: ONNX defines LpNormalization for p = 1 or 2")


def _lp_norm(inputs, attrs):
    x = inputs[0]
    _check_p(attrs)
    axis = normalize_axis(attrs["axis"], x.ndim)
    xs = x.astype(_stage_dtype(x.dtype))
    norm = np.abs(xs).sum(axis=axis, keepdims=True) if attrs["p"] == 1 else \
        np.sqrt((xs * xs).sum(axis=axis, keepdims=True))
    # an all-zero slice has norm 0: its output is defined to be 0
    out = np.divide(xs, norm, out=np.zeros_like(xs), where=norm != 0)
    return [out.astype(x.dtype)]


def _lp_norm_types(inputs, attrs):
    x = inputs[0]
    _check_p(attrs)
    normalize_axis(attrs["axis"], x.ndim)
    return [(tuple(x.shape), dtype_name(x))]


def _lrn(inputs, attrs):
    x = inputs[0]
    size = attrs["size"]
    xs = x.astype(_stage_dtype(x.dtype))
    channels = x.shape[1]
    before = (size - 1) // 2          # the window is c - floor((size-1)/2) .. c + ceil((size-1)/2)
    padded = np.pad(xs * xs, [(0, 0), (before, size - 1 - before)] + [(0, 0)] * (x.ndim - 2))
    square_sum = sum(padded[:, k:k + channels] for k in range(size))
    y = xs / (xs.dtype.type(attrs["bias"]) + xs.dtype.type(attrs["alpha"] / size) * square_sum) \
        ** xs.dtype.type(attrs["beta"])
    return [y.astype(x.dtype)]


def _lrn_types(inputs, attrs):
    x = inputs[0]
    if x.ndim < 2:
        raise OperandError(f"the input {list(x.shape)} needs a batch and a channel axis (rank >= 2)")
    if attrs["size"] < 1:
        raise OperandError(f"size {attrs['size']} must be positive")
    return [(tuple(x.shape), dtype_name(x))]


def _mvn(inputs, attrs):
    x = inputs[0]
    axes = tuple(normalize_axes(attrs["axes"], x.ndim))
    xs = x.astype(_stage_dtype(x.dtype))
    centered = xs - xs.mean(axis=axes, keepdims=True)
    # ONNX's function divides by sqrt(E[x^2] - E[x]^2) + 1e-9; the centered variance is the same
    # value without the cancellation that can make it negative (NaN) for near-constant slices
    std = np.sqrt((centered * centered).mean(axis=axes, keepdims=True))
    return [(centered / (std + xs.dtype.type(1e-9))).astype(x.dtype)]


def _mvn_types(inputs, attrs):
    x = inputs[0]
    normalize_axes(attrs["axes"], x.ndim)
    return [(tuple(x.shape), dtype_name(x))]


DEFS: dict[str, OpDef] = {
    "LayerNormalization": OpDef(_layer_norm, _layer_norm_types, unsupported=_stash_unsupported),
    "RMSNormalization": OpDef(_rms_norm, _rms_norm_types, unsupported=_stash_unsupported),
    "GroupNormalization": OpDef(_group_norm, _group_norm_types, unsupported=_stash_unsupported),
    "InstanceNormalization": OpDef(_instance_norm, _instance_norm_types),
    "LpNormalization": OpDef(_lp_norm, _lp_norm_types),
    "LRN": OpDef(_lrn, _lrn_types),
    "MeanVarianceNormalization": OpDef(_mvn, _mvn_types),
}
