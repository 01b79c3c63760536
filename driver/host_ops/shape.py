"""Data-movement operators: they only reorder, select or copy elements."""
from __future__ import annotations

import numpy as np

from ._operands import operand


def reshape_target(in_shape, shape, allowzero=False) -> tuple[int, ...]:
    """Resolve ONNX Reshape's 0 (copy the input dim unless allowzero) and -1 (infer)."""
    out = [in_shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(shape)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        total = int(np.prod(in_shape))
        out[out.index(-1)] = total // known if known else 0
    return tuple(int(d) for d in out)


def slice_bounds(dim: int, start: int, end: int, step: int) -> slice:
    """ONNX Slice clamping (which differs from Python's for negative steps)."""
    if step == 0:
        raise ValueError("Slice step must not be 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return slice(start, end if end >= 0 else None, step)


def _reshape(inputs, attrs):
    shape = operand(inputs, 1, attrs, "shape")
    return [inputs[0].reshape(reshape_target(inputs[0].shape, shape, attrs.get("allowzero", 0)))]


def _flatten(inputs, attrs):
    x = inputs[0]
    axis = attrs.get("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    return [x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))]


def _transpose(inputs, attrs):
    perm = attrs.get("perm") or list(range(inputs[0].ndim))[::-1]
    return [np.asarray(inputs[0].transpose(perm), order="C")]


def _concat(inputs, attrs):
    return [np.concatenate([x for x in inputs if x is not None], axis=attrs["axis"])]


def split_sizes(dim: int, sizes, count: int) -> list[int]:
    if sizes:
        return list(sizes)
    chunk = -(-dim // count)  # opset 18: equal chunks, the last one smaller if needed
    return [min(chunk, dim - i * chunk) for i in range(count)]


def _split(inputs, attrs):
    x = inputs[0]
    axis = attrs.get("axis", 0) % x.ndim
    sizes = split_sizes(x.shape[axis], operand(inputs, 1, attrs, "split"), attrs["num_outputs"])
    bounds = np.cumsum([0] + sizes)
    return [np.take(x, range(bounds[i], bounds[i + 1]), axis=axis) for i in range(len(sizes))]


def _slice(inputs, attrs):
    x = inputs[0]
    starts = operand(inputs, 1, attrs, "starts")
    ends = operand(inputs, 2, attrs, "ends")
    axes = operand(inputs, 3, attrs, "axes") or list(range(len(starts)))
    steps = operand(inputs, 4, attrs, "steps") or [1] * len(starts)
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis %= x.ndim
        index[axis] = slice_bounds(x.shape[axis], start, end, step)
    return [np.asarray(x[tuple(index)], order="C")]


def _pad(inputs, attrs):
    x = inputs[0]
    pads = list(operand(inputs, 1, attrs, "pads"))
    value = operand(inputs, 2, attrs, "constant_value", 0)
    axes = operand(inputs, 3, attrs, "axes")
    mode = attrs.get("mode", "constant")
    rank = x.ndim
    if axes is not None:
        full = [0] * (2 * rank)
        for i, axis in enumerate(axes):
            full[axis % rank] = pads[i]
            full[rank + axis % rank] = pads[len(axes) + i]
        pads = full
    grow = [(max(pads[i], 0), max(pads[rank + i], 0)) for i in range(rank)]
    mode_np = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode]
    kwargs = {"constant_values": np.asarray(value if value is not None else 0, x.dtype)} \
        if mode == "constant" else {}
    y = np.pad(x, grow, mode=mode_np, **kwargs)
    crop = tuple(slice(-min(pads[i], 0), y.shape[i] + min(pads[rank + i], 0)) for i in range(rank))
    return [np.asarray(y[crop], order="C")]


def _squeeze(inputs, attrs):
    x = inputs[0]
    axes = operand(inputs, 1, attrs, "axes")
    if axes is None:
        return [x.reshape([d for d in x.shape if d != 1])]
    axes = {a % x.ndim for a in axes}
    return [x.reshape([d for i, d in enumerate(x.shape) if i not in axes])]


def unsqueeze_shape(in_shape, axes) -> tuple[int, ...]:
    rank = len(in_shape) + len(axes)
    axes = sorted(a % rank for a in axes)
    out, it = [], iter(in_shape)
    for i in range(rank):
        out.append(1 if i in axes else next(it))
    return tuple(out)


def _unsqueeze(inputs, attrs):
    x = inputs[0]
    return [x.reshape(unsqueeze_shape(x.shape, operand(inputs, 1, attrs, "axes")))]


def _shape(inputs, attrs):
    shape = inputs[0].shape
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return [np.array(shape[slice(start, end)], dtype=np.int64)]


def _gather(inputs, attrs):
    x, idx = inputs
    axis = attrs.get("axis", 0) % x.ndim
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    return [np.take(x, idx, axis=axis)]


OPS = {
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Concat": _concat,
    "Split": _split,
    "Slice": _slice,
    "Pad": _pad,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Shape": _shape,
    "Gather": _gather,
}
