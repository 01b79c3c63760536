"""Shape-making and rearranging operators of the default ONNX domain, one OpDef each: Expand,
Tile, ConstantOfShape, Range, Size, EyeLike, Trilu, DepthToSpace, SpaceToDepth, ReverseSequence.

Where an output shape comes from an operand's values (Expand's shape, Tile's repeats, Range's
bounds), that operand is a constant operand: exporters compute it from static shapes, and
fold_constants turns that arithmetic into a constant.
"""
from __future__ import annotations

import math

import numpy as np

from ._operands import operand
from .errors import OperandError
from .opdef import OpDef, broadcast_shape, dtype_name

# ONNX TensorProto data type codes of the element types vdla runs (the numeric numpy ones).
ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
               10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}


def _dims(inputs, index, attrs, key) -> list[int]:
    """A 1-D operand of sizes (a shape, repeats): present, integral, none negative."""
    value = operand(inputs, index, attrs, key)
    if value is None:
        raise OperandError(f"the {key} operand is required")
    dims = [int(d) for d in np.atleast_1d(value)]
    if any(d < 0 for d in dims):
        raise OperandError(f"{key} {dims} has a negative value")
    return dims


# -- Expand, Tile, ConstantOfShape ------------------------------------------------------------------

def _expand_types(inputs, attrs):
    x = inputs[0]
    shape = _dims(inputs, 1, attrs, "shape")
    try:
        out = broadcast_shape(x.shape, shape)
    except OperandError:
        raise OperandError(f"shape {shape} does not broadcast with the input's {list(x.shape)} (numpy rules: "
                           "trailing dims equal or 1)") from None
    return [(out, dtype_name(x))]


def _expand(inputs, attrs):
    (shape, _), = _expand_types(inputs, attrs)
    return [np.array(np.broadcast_to(inputs[0], shape))]


def _tile_types(inputs, attrs):
    x = inputs[0]
    repeats = _dims(inputs, 1, attrs, "repeats")
    if len(repeats) != len(x.shape):
        raise OperandError(f"repeats {repeats} has {len(repeats)} values for a rank-{len(x.shape)} input "
                           f"{list(x.shape)}; expected one per dim")
    return [(tuple(d * r for d, r in zip(x.shape, repeats)), dtype_name(x))]


def _tile(inputs, attrs):
    (shape, _), = _tile_types(inputs, attrs)
    x = inputs[0]
    # np.tile of a 0-d input with no repeats is 1-D; the ONNX output keeps the input's rank
    return [np.tile(x, _dims(inputs, 1, attrs, "repeats")).reshape(shape)]


def _fill_value(attrs) -> np.ndarray:
    """ConstantOfShape's one element: the value attribute, or float32 0 without one."""
    value = attrs.get("value")
    if value is None:
        return np.zeros((), np.float32)
    value = np.asarray(value)
    if value.size != 1:
        raise OperandError(f"value must hold exactly one element, got shape {list(value.shape)}")
    return value.reshape(())


def _constant_of_shape_types(inputs, attrs):
    return [(tuple(_dims(inputs, 0, attrs, "shape")), dtype_name(_fill_value(attrs)))]


def _constant_of_shape(inputs, attrs):
    return [np.full(_dims(inputs, 0, attrs, "shape"), _fill_value(attrs))]


def _unsupported_fill(attrs):
    dtype = dtype_name(_fill_value(attrs)) if "value" in attrs else "float32"
    if dtype not in ONNX_DTYPES.values():
        return f"value of type {dtype}; supported: {', '.join(sorted(ONNX_DTYPES.values()))}"
    return None


# -- Range ----------------------------------------------------------------------------------------

RANGE_BOUNDS = ("start", "limit", "delta")


def _range_bounds(inputs, attrs) -> tuple[list, str]:
    """(start, limit, delta) as Python numbers and the output dtype name. The dtype is the
    operands' own; absorb_constant_operands later leaves only Python numbers in attrs, so the
    first typing records it in attrs["dtype"] for later passes and the runtime."""
    arrays = [inputs[i] if len(inputs) > i and inputs[i] is not None else None for i in range(3)]
    if all(a is not None for a in arrays):
        dtypes = {dtype_name(a) for a in arrays}
        if len(dtypes) > 1:
            raise OperandError(f"start, limit and delta must have one type, got {', '.join(sorted(dtypes))}")
        attrs["dtype"] = dtypes.pop()
    if "dtype" not in attrs:
        raise OperandError("start, limit and delta are required")
    values = []
    for i, key in enumerate(RANGE_BOUNDS):
        value = np.asarray(operand(inputs, i, attrs, key))
        if value.size != 1:
            raise OperandError(f"{key} must be a scalar, got shape {list(value.shape)}")
        values.append(value.reshape(()).item())
    return values, attrs["dtype"]


def _range_work_dtype(dtype: str, attrs) -> np.dtype:
    """float16 steps in the stash type (float32 by default: exact where float16 additions are not)."""
    if dtype == "float16":
        return np.dtype(ONNX_DTYPES[attrs.get("stash_type", 1)])
    return np.dtype(dtype)


def _range_count(start, limit, delta, dtype: str, work: np.dtype) -> int:
    if delta == 0:
        raise OperandError("delta must not be 0")
    if np.dtype(dtype).kind in "iu":
        return max(-((start - limit) // delta), 0)          # exact ceil((limit - start) / delta)
    span = float(work.type(limit) - work.type(start))      # the difference in the operands' precision
    count = span / float(delta)
    if not math.isfinite(count):
        raise OperandError(f"start {start}, limit {limit}, delta {delta} do not make a finite range")
    return max(math.ceil(count), 0)


def _range_types(inputs, attrs):
    (start, limit, delta), dtype = _range_bounds(inputs, attrs)
    return [((_range_count(start, limit, delta, dtype, _range_work_dtype(dtype, attrs)),), dtype)]


def _range(inputs, attrs):
    (start, limit, delta), dtype = _range_bounds(inputs, attrs)
    work = _range_work_dtype(dtype, attrs)
    count = _range_count(start, limit, delta, dtype, work)
    steps = np.arange(count, dtype=work) * work.type(delta)
    return [(work.type(start) + steps).astype(dtype)]


def _unsupported_stash(attrs):
    stash = attrs.get("stash_type", 1)
    if stash not in (1, 10, 11):
        return f"stash_type {stash}; supported: 1 (float), 10 (float16), 11 (double)"
    return None


# -- Size, EyeLike, Trilu -------------------------------------------------------------------------

def _size(inputs, attrs):
    return [np.array(inputs[0].size, np.int64)]


def _eye_like_types(inputs, attrs):
    x = inputs[0]
    if len(x.shape) != 2:
        raise OperandError(f"input has shape {list(x.shape)}; EyeLike takes a 2-D input")
    return [(tuple(x.shape), ONNX_DTYPES[attrs["dtype"]] if "dtype" in attrs else dtype_name(x))]


def _eye_like(inputs, attrs):
    (shape, dtype), = _eye_like_types(inputs, attrs)
    return [np.eye(*shape, k=attrs.get("k", 0), dtype=dtype)]


def _unsupported_eye_dtype(attrs):
    if "dtype" in attrs and attrs["dtype"] not in ONNX_DTYPES:
        return (f"dtype {attrs['dtype']} (an ONNX TensorProto type); supported: "
                f"{', '.join(f'{code} ({name})' for code, name in ONNX_DTYPES.items())}")
    return None


def _trilu_types(inputs, attrs):
    x = inputs[0]
    if len(x.shape) < 2:
        raise OperandError(f"input has shape {list(x.shape)}; Trilu takes a matrix or a batch of them (rank >= 2)")
    return [(tuple(x.shape), dtype_name(x))]


def _trilu(inputs, attrs):
    _trilu_types(inputs, attrs)
    k = np.asarray(operand(inputs, 1, attrs, "k", 0))
    if k.size != 1:
        raise OperandError(f"k must be a scalar, got shape {list(k.shape)}")
    keep = np.triu if attrs.get("upper", 1) else np.tril
    return [keep(inputs[0], int(k.reshape(())))]


# -- DepthToSpace, SpaceToDepth ------------------------------------------------------------------

BLOCK_MODES = ("DCR", "CRD")


def _block_args(x_shape, attrs) -> tuple[int, str]:
    if len(x_shape) != 4:
        raise OperandError(f"input has shape {list(x_shape)}; expected [N, C, H, W]")
    if "blocksize" not in attrs:
        raise OperandError("the blocksize attribute is required")
    b, mode = int(attrs["blocksize"]), attrs.get("mode", "DCR")
    if b < 1:
        raise OperandError(f"blocksize {b} must be at least 1")
    if mode not in BLOCK_MODES:
        raise OperandError(f"mode {mode!r} is not one of {', '.join(BLOCK_MODES)}")
    return b, mode


def _depth_to_space_types(inputs, attrs):
    x = inputs[0]
    b, _ = _block_args(x.shape, attrs)
    n, c, h, w = x.shape
    if c % (b * b):
        raise OperandError(f"the input's {c} channels do not split into blocksize^2 = {b * b} blocks")
    return [((n, c // (b * b), h * b, w * b), dtype_name(x))]


def _depth_to_space(inputs, attrs):
    x = inputs[0]
    (shape, _), = _depth_to_space_types(inputs, attrs)
    b, mode = _block_args(x.shape, attrs)
    n, c, h, w = x.shape
    if mode == "DCR":   # channel = (row offset, column offset, depth)
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:               # channel = (depth, row offset, column offset)
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return [np.asarray(y, order="C").reshape(shape)]


def _space_to_depth_types(inputs, attrs):
    x = inputs[0]
    b, _ = _block_args(x.shape, attrs)
    n, c, h, w = x.shape
    if h % b or w % b:
        raise OperandError(f"the input's height {h} and width {w} must both be multiples of blocksize {b}")
    return [((n, c * b * b, h // b, w // b), dtype_name(x))]


def _space_to_depth(inputs, attrs):
    x = inputs[0]
    (shape, _), = _space_to_depth_types(inputs, attrs)
    b, mode = _block_args(x.shape, attrs)
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // b, b, w // b, b)      # axes: n, c, y, row offset, x, column offset
    order = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    return [np.asarray(blocks.transpose(order), order="C").reshape(shape)]


# -- ReverseSequence ------------------------------------------------------------------------------

def _sequence_axes(x_shape, attrs) -> tuple[int, int]:
    if len(x_shape) < 2:
        raise OperandError(f"input has shape {list(x_shape)}; expected rank >= 2 (a time and a batch axis)")
    batch, time = attrs.get("batch_axis", 1), attrs.get("time_axis", 0)
    if {batch, time} != {0, 1}:
        raise OperandError(f"batch_axis {batch} and time_axis {time} must be 0 and 1, one each")
    return batch, time


def _reverse_sequence_types(inputs, attrs):
    x, lens = inputs[0], inputs[1]
    batch, _ = _sequence_axes(x.shape, attrs)
    if tuple(lens.shape) != (x.shape[batch],):
        raise OperandError(f"sequence_lens has shape {list(lens.shape)}; expected [{x.shape[batch]}] (one length "
                           f"per batch entry of the input {list(x.shape)})")
    return [(tuple(x.shape), dtype_name(x))]


def _reverse_sequence(inputs, attrs):
    _reverse_sequence_types(inputs, attrs)
    x, lens = inputs[0], np.asarray(inputs[1]).astype(np.int64)
    _, time = _sequence_axes(x.shape, attrs)
    steps = x.shape[time]
    bad = (lens < 0) | (lens > steps)
    if bad.any():
        raise OperandError(f"sequence_lens holds {int(lens[bad][0])}, outside 0..{steps} (the time axis has "
                           f"{steps} steps)")
    tb = x if time == 0 else x.swapaxes(0, 1)          # [time, batch, ...]
    t = np.arange(steps)[:, None]
    source = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)
    y = tb[source, np.arange(tb.shape[1])[None, :]]
    return [np.asarray(y if time == 0 else y.swapaxes(0, 1), order="C")]


DEFS: dict[str, OpDef] = {
    "Expand": OpDef(_expand, _expand_types, constant_operands={1: "shape"}),
    "Tile": OpDef(_tile, _tile_types, constant_operands={1: "repeats"}),
    "ConstantOfShape": OpDef(_constant_of_shape, _constant_of_shape_types, constant_operands={0: "shape"},
                             unsupported=_unsupported_fill),
    "Range": OpDef(_range, _range_types, constant_operands=dict(enumerate(RANGE_BOUNDS)),
                   unsupported=_unsupported_stash),
    "Size": OpDef(_size, lambda inputs, attrs: [((), "int64")]),
    "EyeLike": OpDef(_eye_like, _eye_like_types, unsupported=_unsupported_eye_dtype),
    "Trilu": OpDef(_trilu, _trilu_types, constant_operands={1: "k"}),
    "DepthToSpace": OpDef(_depth_to_space, _depth_to_space_types),
    "SpaceToDepth": OpDef(_space_to_depth, _space_to_depth_types),
    "ReverseSequence": OpDef(_reverse_sequence, _reverse_sequence_types),
}
