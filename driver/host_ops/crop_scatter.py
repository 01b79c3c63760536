"""Ops that place one tensor's elements into a fixed-shape frame, of the default ONNX domain:
CenterCropPad (a centered window of a constant shape, cropped or zero-padded per axis) and
TensorScatter (a KV-cache update: rows of `update` written at per-batch offsets along the
sequence axis of a same-shaped copy of `past_cache`), one OpDef each."""
from __future__ import annotations

import numpy as np

from ._operands import operand
from .axes import normalize_axes, normalize_axis
from .errors import OperandError
from .opdef import OpDef, dtype_name


# -- CenterCropPad ----------------------------------------------------------------------------------

def _crop_targets(inputs, attrs, shape) -> dict[int, int]:
    """axis -> the output's length on it, for the axes the shape operand names."""
    target = operand(inputs, 1, attrs, "shape")
    if target is None:
        raise OperandError("the shape operand is required")
    target = [int(d) for d in np.atleast_1d(target)]
    rank = len(shape)
    axes = normalize_axes(attrs["axes"], rank) if "axes" in attrs else list(range(rank))
    if len(target) != len(axes):
        raise OperandError(f"shape {target} has {len(target)} lengths for {len(axes)} axes {axes}")
    if any(d < 0 for d in target):
        raise OperandError(f"shape {target} has a negative length")
    return dict(zip(axes, target))


def _center_crop_pad_types(inputs, attrs):
    x = inputs[0]
    targets = _crop_targets(inputs, attrs, x.shape)
    return [(tuple(targets.get(i, d) for i, d in enumerate(x.shape)), dtype_name(x))]


def _center_crop_pad(inputs, attrs):
    x = inputs[0]
    targets = _crop_targets(inputs, attrs, x.shape)
    src, dst = [], []
    for i, d in enumerate(x.shape):
        n = targets.get(i, d)
        # a crop starts at floor((d - n) / 2); a pad puts floor((n - d) / 2) zeros before and the
        # odd one after
        start = (d - n) // 2 if d > n else 0
        offset = (n - d) // 2 if n > d else 0
        kept = min(d, n)
        src.append(slice(start, start + kept))
        dst.append(slice(offset, offset + kept))
    out = np.zeros(tuple(targets.get(i, d) for i, d in enumerate(x.shape)), x.dtype)
    out[tuple(dst)] = x[tuple(src)]
    return [out]


# -- TensorScatter ----------------------------------------------------------------------------------

def _scatter_axis(past_shape, update_shape, attrs) -> int:
    rank = len(past_shape)
    axis = normalize_axis(attrs["axis"], rank)
    if axis == 0:
        raise OperandError(f"axis {attrs['axis']} is the batch axis; the sequence axis must be another")
    if len(update_shape) != rank or any(u != p for i, (u, p) in enumerate(zip(update_shape, past_shape))
                                        if i != axis):
        raise OperandError(f"update {list(update_shape)} must have past_cache's shape {list(past_shape)} "
                           f"except along the sequence axis {axis}")
    if update_shape[axis] > past_shape[axis]:
        raise OperandError(f"update's {update_shape[axis]} positions along axis {axis} exceed past_cache's "
                           f"{past_shape[axis]}")
    return axis


def _tensor_scatter_types(inputs, attrs):
    past, update = inputs[0], inputs[1]
    _scatter_axis(past.shape, update.shape, attrs)
    if dtype_name(update) != dtype_name(past):
        raise OperandError(f"update is {dtype_name(update)} and past_cache {dtype_name(past)}: they must match")
    write = inputs[2] if len(inputs) > 2 else None
    if write is not None and tuple(write.shape) != (past.shape[0],):
        raise OperandError(f"write_indices {list(write.shape)} must be [{past.shape[0]}], one per batch entry")
    return [(tuple(past.shape), dtype_name(past))]


def _tensor_scatter(inputs, attrs):
    past, update = inputs[0], inputs[1]
    axis = _scatter_axis(past.shape, update.shape, attrs)
    write = inputs[2] if len(inputs) > 2 and inputs[2] is not None else np.zeros(past.shape[0], np.int64)
    length, count = past.shape[axis], update.shape[axis]
    circular = attrs["mode"] == "circular"
    if write.size and write.min() < 0:
        raise OperandError(f"write_indices {write.tolist()} has a negative index")
    if not circular and write.size and write.max() + count > length:
        raise OperandError(f"write_indices {write.tolist()} plus the update's {count} positions pass the "
                           f"{length} of past_cache's axis {axis} (mode 'linear')")
    out = past.copy()
    for b, start in enumerate(write.tolist()):
        rows = np.arange(start, start + count)
        target = np.moveaxis(out[b], axis - 1, 0)        # a view: the sequence axis first
        target[rows % length if circular else rows] = np.moveaxis(update[b], axis - 1, 0)
    return [out]


def _tensor_scatter_unsupported(attrs):
    if attrs["mode"] not in ("linear", "circular"):
        return f"mode={attrs['mode']!r}; the ONNX values are 'linear' and 'circular'"
    return None


DEFS: dict[str, OpDef] = {
    "CenterCropPad": OpDef(_center_crop_pad, _center_crop_pad_types, constant_operands={1: "shape"}),
    "TensorScatter": OpDef(_tensor_scatter, _tensor_scatter_types, unsupported=_tensor_scatter_unsupported),
}
