"""Data-movement operators: they only reorder, select or copy elements.

Each op has a shape rule, `SHAPES[op](inputs, attrs) -> [output shapes]`, that reads only the
shapes of its data inputs (and the values of constant operands such as Reshape's shape): the
compiler's shape inference calls it without materializing a tensor, and the op itself calls it
first, so the two cannot disagree. A rule raises OperandError for attribute or operand values the
ONNX definition forbids, naming the attribute and what was expected.
"""
from __future__ import annotations

import math

import numpy as np

from ._operands import operand
from .axes import normalize_axes, normalize_axis
from .errors import OperandError

PAD_MODES = ("constant", "reflect", "edge", "wrap")


def reshape_target(in_shape, shape, allowzero=False) -> tuple[int, ...]:
    """Resolve ONNX Reshape's 0 (copy the input dim unless allowzero) and -1 (infer)."""
    shape = [int(d) for d in np.atleast_1d(shape)]
    total = math.prod(in_shape)
    if shape.count(-1) > 1:
        raise OperandError(f"shape {shape} has more than one -1 (at most one dimension is inferred)")
    if any(d < -1 for d in shape):
        raise OperandError(f"shape {shape} has a dimension below -1 (expected -1, 0 or a positive size)")
    if allowzero and 0 in shape and -1 in shape:
        raise OperandError(f"shape {shape} has both 0 and -1 with allowzero=1 (the -1 cannot be inferred)")
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= len(in_shape):
                raise OperandError(f"shape {shape}: the 0 at position {i} copies an input dimension, but the "
                                   f"input {list(in_shape)} has rank {len(in_shape)}")
            d = in_shape[i]
        out.append(d)
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or total % known:
            raise OperandError(f"cannot reshape {list(in_shape)} ({total} elements) to {shape}")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        raise OperandError(f"cannot reshape {list(in_shape)} ({total} elements) to {shape} "
                           f"({math.prod(out)} elements)")
    return tuple(out)


def slice_bounds(dim: int, start: int, end: int, step: int) -> slice:
    """ONNX Slice clamping (which differs from Python's for negative steps)."""
    if step == 0:
        raise OperandError("steps must not contain 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return slice(start, end if end >= 0 else None, step)


def split_sizes(dim: int, sizes, count: int, require_even: bool = False) -> list[int]:
    """The part sizes of a Split of `dim` into `count` outputs; `require_even` is the rule before
    opset 18 (without sizes, the dim must divide evenly)."""
    if sizes:
        sizes = [int(s) for s in sizes]
        if len(sizes) != count:
            raise OperandError(f"split {sizes} has {len(sizes)} entries for {count} outputs")
        if any(s < 0 for s in sizes):
            raise OperandError(f"split {sizes} has a negative size")
        if sum(sizes) != dim:
            raise OperandError(f"split {sizes} adds up to {sum(sizes)}, but the split axis has {dim} elements")
        return sizes
    if count < 1:
        raise OperandError(f"num_outputs must be at least 1, got {count}")
    if require_even and dim % count:
        raise OperandError(f"the split axis has {dim} elements, which {count} outputs cannot share evenly "
                           "(give split sizes)")
    chunk = -(-dim // count)  # opset 18: equal chunks, the last one smaller if needed
    return [max(0, min(chunk, dim - i * chunk)) for i in range(count)]


def unsqueeze_shape(in_shape, axes) -> tuple[int, ...]:
    rank = len(in_shape) + len(axes)
    axes = set(normalize_axes(axes, rank))
    out, it = [], iter(in_shape)
    for i in range(rank):
        out.append(1 if i in axes else next(it))
    return tuple(out)


def _reshape_shapes(inputs, attrs):
    shape = operand(inputs, 1, attrs, "shape")
    if shape is None:
        raise OperandError("the shape operand is missing")
    return [reshape_target(inputs[0].shape, shape, attrs.get("allowzero", 0))]


def _flatten_shapes(inputs, attrs):
    shape = inputs[0].shape
    axis = normalize_axis(attrs.get("axis", 1), len(shape), "axis", allow_rank=True)
    return [(math.prod(shape[:axis]), math.prod(shape[axis:]))]


def _perm(x_shape, attrs) -> list[int]:
    rank = len(x_shape)
    perm = attrs.get("perm") or list(range(rank))[::-1]
    if sorted(perm) != list(range(rank)):
        raise OperandError(f"perm {list(perm)} is not a permutation of 0..{rank - 1} (the input has rank {rank})")
    return list(perm)


def _transpose_shapes(inputs, attrs):
    shape = inputs[0].shape
    return [tuple(shape[p] for p in _perm(shape, attrs))]


def _concat_shapes(inputs, attrs):
    shapes = [x.shape for x in inputs if x is not None]
    if not shapes:
        raise OperandError("Concat needs at least one input")
    rank = len(shapes[0])
    if "axis" not in attrs:
        raise OperandError("the axis attribute is required")
    axis = normalize_axis(attrs["axis"], rank)
    for i, s in enumerate(shapes):
        if len(s) != rank or any(a != b for k, (a, b) in enumerate(zip(s, shapes[0])) if k != axis):
            raise OperandError(f"input {i} has shape {list(s)}, which does not match input 0 {list(shapes[0])} "
                               f"outside axis {axis}")
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return [tuple(out)]


def _split_parts(x_shape, inputs, attrs) -> tuple[int, list[int]]:
    axis = normalize_axis(attrs.get("axis", 0), len(x_shape))
    sizes = operand(inputs, 1, attrs, "split")
    if sizes is not None:
        sizes = np.atleast_1d(sizes).tolist()
    return axis, split_sizes(x_shape[axis], sizes, attrs["num_outputs"], attrs.get("require_even", False))


def _split_shapes(inputs, attrs):
    shape = inputs[0].shape
    axis, sizes = _split_parts(shape, inputs, attrs)
    return [shape[:axis] + (s,) + shape[axis + 1:] for s in sizes]


def _slice_index(x_shape, inputs, attrs) -> tuple:
    rank = len(x_shape)
    starts = operand(inputs, 1, attrs, "starts")
    ends = operand(inputs, 2, attrs, "ends")
    if starts is None or ends is None:
        raise OperandError("starts and ends are required")
    starts, ends = list(np.atleast_1d(starts)), list(np.atleast_1d(ends))
    axes = operand(inputs, 3, attrs, "axes")
    axes = list(range(len(starts))) if axes is None else list(np.atleast_1d(axes))
    steps = operand(inputs, 4, attrs, "steps")
    steps = [1] * len(starts) if steps is None else list(np.atleast_1d(steps))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise OperandError(f"starts, ends, axes and steps must have one entry per sliced axis; got lengths "
                           f"{len(starts)}, {len(ends)}, {len(axes)}, {len(steps)}")
    index = [slice(None)] * rank
    for start, end, axis, step in zip(starts, ends, normalize_axes(axes, rank), steps):
        index[axis] = slice_bounds(x_shape[axis], int(start), int(end), int(step))
    return tuple(index)


def _slice_shapes(inputs, attrs):
    shape = inputs[0].shape
    index = _slice_index(shape, inputs, attrs)
    return [tuple(len(range(d)[s]) for d, s in zip(shape, index))]


def _full_pads(x_shape, inputs, attrs) -> list[int]:
    """[begin per axis..., end per axis...] over every axis, checked against the mode."""
    rank = len(x_shape)
    pads = operand(inputs, 1, attrs, "pads")
    if pads is None:
        raise OperandError("the pads operand is required")
    pads = [int(p) for p in np.atleast_1d(pads)]
    axes = operand(inputs, 3, attrs, "axes")
    axes = list(range(rank)) if axes is None else normalize_axes(np.atleast_1d(axes).tolist(), rank)
    if len(pads) != 2 * len(axes):
        raise OperandError(f"pads {pads} has {len(pads)} values; expected 2 x {len(axes)} (a begin and an end "
                           f"per padded axis)")
    full = [0] * (2 * rank)
    for i, axis in enumerate(axes):
        full[axis], full[rank + axis] = pads[i], pads[len(axes) + i]
    mode = attrs.get("mode", "constant")
    if mode not in PAD_MODES:
        raise OperandError(f"mode {mode!r} is not one of {', '.join(PAD_MODES)}")
    for axis in range(rank):
        begin, end, dim = full[axis], full[rank + axis], x_shape[axis]
        if dim + begin + end < 0:
            raise OperandError(f"pads {pads} crop axis {axis} ({dim} elements) below zero size")
        if mode != "constant" and dim == 0 and (begin > 0 or end > 0):
            raise OperandError(f"mode {mode!r} cannot pad axis {axis}: it is empty")
        if mode == "reflect" and max(begin, end) > dim - 1:
            raise OperandError(f"mode 'reflect' pads axis {axis} ({dim} elements) by {max(begin, end)}; "
                               f"expected at most {dim - 1} per side")
    return full


def _pad_shapes(inputs, attrs):
    shape = inputs[0].shape
    rank = len(shape)
    full = _full_pads(shape, inputs, attrs)
    return [tuple(shape[i] + full[i] + full[rank + i] for i in range(rank))]


def _squeezed(x_shape, inputs, attrs) -> tuple[int, ...]:
    axes = operand(inputs, 1, attrs, "axes")
    if axes is None:
        return tuple(d for d in x_shape if d != 1)
    axes = normalize_axes(np.atleast_1d(axes).tolist(), len(x_shape))
    for axis in axes:
        if x_shape[axis] != 1:
            raise OperandError(f"axes names axis {axis}, which has {x_shape[axis]} elements; only axes of "
                               "size 1 can be squeezed")
    return tuple(d for i, d in enumerate(x_shape) if i not in axes)


def _unsqueezed(x_shape, inputs, attrs) -> tuple[int, ...]:
    axes = operand(inputs, 1, attrs, "axes")
    if axes is None:
        raise OperandError("axes is required")
    return unsqueeze_shape(x_shape, np.atleast_1d(axes).tolist())


def _shape_shapes(inputs, attrs):
    rank = len(inputs[0].shape)
    return [(len(range(rank)[attrs.get("start", 0):attrs.get("end", None)]),)]


def _gather_shapes(inputs, attrs):
    x, idx = inputs[0].shape, inputs[1].shape
    axis = normalize_axis(attrs.get("axis", 0), len(x))
    return [x[:axis] + idx + x[axis + 1:]]


SHAPES = {
    "Reshape": _reshape_shapes,
    "Flatten": _flatten_shapes,
    "Transpose": _transpose_shapes,
    "Concat": _concat_shapes,
    "Split": _split_shapes,
    "Slice": _slice_shapes,
    "Pad": _pad_shapes,
    "Squeeze": lambda inputs, attrs: [_squeezed(inputs[0].shape, inputs, attrs)],
    "Unsqueeze": lambda inputs, attrs: [_unsqueezed(inputs[0].shape, inputs, attrs)],
    "Shape": _shape_shapes,
    "Gather": _gather_shapes,
}


def _reshape(inputs, attrs):
    return [inputs[0].reshape(_reshape_shapes(inputs, attrs)[0])]


def _flatten(inputs, attrs):
    return [inputs[0].reshape(_flatten_shapes(inputs, attrs)[0])]


def _transpose(inputs, attrs):
    return [np.asarray(inputs[0].transpose(_perm(inputs[0].shape, attrs)), order="C")]


def _concat(inputs, attrs):
    _concat_shapes(inputs, attrs)
    parts = [x for x in inputs if x is not None]
    return [np.concatenate(parts, axis=normalize_axis(attrs["axis"], parts[0].ndim))]


def _split(inputs, attrs):
    x = inputs[0]
    axis, sizes = _split_parts(x.shape, inputs, attrs)
    bounds = np.cumsum([0] + sizes)
    return [np.take(x, range(bounds[i], bounds[i + 1]), axis=axis) for i in range(len(sizes))]


def _slice(inputs, attrs):
    x = inputs[0]
    return [np.asarray(x[_slice_index(x.shape, inputs, attrs)], order="C")]


def _pad(inputs, attrs):
    x = inputs[0]
    rank = x.ndim
    pads = _full_pads(x.shape, inputs, attrs)
    value = operand(inputs, 2, attrs, "constant_value", 0)
    mode = attrs.get("mode", "constant")
    grow = [(max(pads[i], 0), max(pads[rank + i], 0)) for i in range(rank)]
    kwargs = {"constant_values": np.asarray(value if value is not None else 0, x.dtype)} \
        if mode == "constant" else {}
    y = np.pad(x, grow, mode=mode, **kwargs)
    crop = tuple(slice(-min(pads[i], 0), y.shape[i] + min(pads[rank + i], 0)) for i in range(rank))
    return [np.asarray(y[crop], order="C")]


def _shape(inputs, attrs):
    shape = inputs[0].shape
    return [np.array(shape[attrs.get("start", 0):attrs.get("end", None)], dtype=np.int64)]


def _gather(inputs, attrs):
    x, idx = inputs
    axis = normalize_axis(attrs.get("axis", 0), x.ndim)
    dim = x.shape[axis]
    idx = np.asarray(idx)
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        bad = idx[(idx < -dim) | (idx >= dim)].flat[0]
        raise OperandError(f"indices holds {int(bad)}, outside the {dim} elements of axis {axis} "
                           f"(expected {-dim}..{dim - 1})")
    return [np.take(x, np.where(idx < 0, idx + dim, idx), axis=axis)]


OPS = {
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Concat": _concat,
    "Split": _split,
    "Slice": _slice,
    "Pad": _pad,
    "Squeeze": lambda inputs, attrs: [inputs[0].reshape(_squeezed(inputs[0].shape, inputs, attrs))],
    "Unsqueeze": lambda inputs, attrs: [inputs[0].reshape(_unsqueezed(inputs[0].shape, inputs, attrs))],
    "Shape": _shape,
    "Gather": _gather,
}
