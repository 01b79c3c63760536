"""Indexing operators of the default ONNX domain: GatherElements, GatherND, ScatterElements,
ScatterND and OneHot, one OpDef each.

Their index operands are data: the type rules read only their shapes, and the ops check the
values when they run. An index outside [-s, s-1] is an OperandError naming the operand (numpy
would raise IndexError, or wrap a negative one around a second time); OneHot alone defines
out-of-range indices (an all-off row).
"""
from __future__ import annotations

import math

import numpy as np

from ._operands import operand
from .axes import normalize_axis
from .errors import OperandError
from .opdef import OpDef, dtype_name

REDUCTIONS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def in_range(indices, dims, what: str) -> np.ndarray:
    """`indices` (int64) with negatives counted from the end of `dims`, which broadcasts against
    them (one size per index component); a value outside [-s, s-1] is an error naming `what`."""
    idx = np.asarray(indices).astype(np.int64)
    dims = np.broadcast_to(np.asarray(dims, np.int64), idx.shape)
    bad = (idx < -dims) | (idx >= dims)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        value, dim = int(idx[where]), int(dims[where])
        raise OperandError(f"{what} holds {value} at {list(where)}, outside the {dim} elements it indexes "
                           f"(expected {-dim}..{dim - 1})")
    return np.where(idx < 0, idx + dims, idx)


def _reduction(attrs) -> str:
    # opsets before 16 declare no reduction attribute: they replace
    return attrs.get("reduction", "none")


def _unsupported_reduction(attrs):
    reduction = _reduction(attrs)
    if reduction != "none" and reduction not in REDUCTIONS:
        return f"reduction {reduction!r}; supported: none, {', '.join(REDUCTIONS)}"
    return None


# -- GatherElements, ScatterElements: one index per element along `axis` --------------------------

def _elements_axis(data_shape, index_shape, attrs, what: str) -> int:
    """The checked axis of an elements op whose `what` operand indexes data along it."""
    rank = len(data_shape)
    if rank < 1:
        raise OperandError("data must have rank >= 1")
    axis = normalize_axis(attrs.get("axis", 0), rank)
    if len(index_shape) != rank:
        raise OperandError(f"{what} has shape {list(index_shape)} (rank {len(index_shape)}); expected the rank "
                           f"of data {list(data_shape)}")
    # every position but the one along axis indexes data directly, so it must exist there
    over = [i for i in range(rank) if i != axis and index_shape[i] > data_shape[i]]
    if over:
        raise OperandError(f"{what} has shape {list(index_shape)}, larger than data {list(data_shape)} on axis "
                           f"{over[0]} (only the gather/scatter axis {axis} may differ)")
    return axis


def _element_positions(data_shape, indices, axis) -> tuple:
    """The data position of every element of `indices`: its own index, with `axis` replaced."""
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = in_range(indices, data_shape[axis], "indices")
    return tuple(grid)


def _gather_elements_types(inputs, attrs):
    data, indices = inputs[0], inputs[1]
    _elements_axis(data.shape, indices.shape, attrs, "indices")
    return [(tuple(indices.shape), dtype_name(data))]


def _gather_elements(inputs, attrs):
    data, indices = inputs[0], np.asarray(inputs[1])
    axis = _elements_axis(data.shape, indices.shape, attrs, "indices")
    return [np.asarray(data[_element_positions(data.shape, indices, axis)], order="C")]


def _scatter_elements_types(inputs, attrs):
    data, indices, updates = inputs[0], inputs[1], inputs[2]
    _elements_axis(data.shape, indices.shape, attrs, "indices")
    if tuple(updates.shape) != tuple(indices.shape):
        raise OperandError(f"updates has shape {list(updates.shape)}; expected the shape of indices "
                           f"{list(indices.shape)}")
    return [(tuple(data.shape), dtype_name(data))]


def _scatter(out, positions, updates, attrs):
    """Write (or reduce) `updates` into `out` at `positions`, in order."""
    reduction = _reduction(attrs)
    if reduction == "none":
        out[positions] = updates
    else:
        REDUCTIONS[reduction].at(out, positions, updates)
    return out


def _scatter_elements(inputs, attrs):
    _scatter_elements_types(inputs, attrs)
    data, indices, updates = inputs[0], np.asarray(inputs[1]), np.asarray(inputs[2], inputs[0].dtype)
    axis = normalize_axis(attrs.get("axis", 0), data.ndim)
    return [_scatter(data.copy(), _element_positions(data.shape, indices, axis), updates, attrs)]


# -- GatherND, ScatterND: index tuples into the leading dims -------------------------------------

def _gather_nd_types(inputs, attrs):
    data, indices = inputs[0].shape, inputs[1].shape
    r, q, b = len(data), len(indices), attrs.get("batch_dims", 0)
    if r < 1 or q < 1:
        raise OperandError(f"data {list(data)} and indices {list(indices)} must both have rank >= 1")
    if not 0 <= b < min(q, r):
        raise OperandError(f"batch_dims {b} must be in 0..{min(q, r) - 1} (below the ranks of data, {r}, and "
                           f"indices, {q})")
    if tuple(data[:b]) != tuple(indices[:b]):
        raise OperandError(f"the first batch_dims={b} dims of data {list(data)} and indices {list(indices)} "
                           "must be equal")
    m = indices[-1]
    if not 1 <= m <= r - b:
        raise OperandError(f"indices has shape {list(indices)}: its last dim {m} (the length of an index "
                           f"tuple) must be in 1..{r - b} (data rank {r} minus batch_dims {b})")
    return [(tuple(indices[:-1]) + tuple(data[b + m:]), dtype_name(inputs[0]))]


def _gather_nd(inputs, attrs):
    data, indices = inputs[0], np.asarray(inputs[1])
    (shape, _), = _gather_nd_types(inputs, attrs)
    b, m = attrs.get("batch_dims", 0), indices.shape[-1]
    idx = in_range(indices, data.shape[b:b + m], "indices")
    batches = math.prod(data.shape[:b])
    flat = data.reshape((batches,) + data.shape[b:])
    tuples = idx.reshape(batches, -1, m)
    rows = np.arange(batches)[:, None]
    picked = flat[(rows,) + tuple(tuples[..., k] for k in range(m))]
    return [np.asarray(picked.reshape(shape), order="C")]


def _scatter_nd_types(inputs, attrs):
    data, indices, updates = inputs[0].shape, inputs[1].shape, inputs[2].shape
    if len(data) < 1 or len(indices) < 1:
        raise OperandError(f"data {list(data)} and indices {list(indices)} must both have rank >= 1")
    k = indices[-1]
    if k > len(data):
        raise OperandError(f"indices has shape {list(indices)}: its last dim {k} (the length of an index tuple) "
                           f"must be at most the rank of data {list(data)}")
    expected = tuple(indices[:-1]) + tuple(data[k:])
    if tuple(updates) != expected:
        raise OperandError(f"updates has shape {list(updates)}; expected {list(expected)} (indices' "
                           f"{list(indices[:-1])} followed by data's {list(data[k:])})")
    return [(tuple(data), dtype_name(inputs[0]))]


def _scatter_nd(inputs, attrs):
    _scatter_nd_types(inputs, attrs)
    data, indices, updates = inputs[0], np.asarray(inputs[1]), np.asarray(inputs[2], inputs[0].dtype)
    k = indices.shape[-1]
    count = math.prod(indices.shape[:-1])
    tuples = in_range(indices, data.shape[:k], "indices").reshape(count, k)
    slices = updates.reshape((len(tuples),) + data.shape[k:])
    out = data.copy()
    if k == 0:      # every update covers the whole tensor
        for update in slices:
            out = _scatter(out, Ellipsis, update, attrs)
        return [out]
    return [_scatter(out, tuple(tuples.T), slices, attrs)]


# -- OneHot ----------------------------------------------------------------------------------------

def _depth(inputs, attrs) -> int:
    depth = np.asarray(operand(inputs, 1, attrs, "depth"))
    if depth.size != 1:
        raise OperandError(f"depth must hold one value, got shape {list(depth.shape)}")
    depth = int(depth.reshape(()).astype(np.int64))     # the spec casts a non-integer depth to int64
    if depth < 1:
        raise OperandError(f"depth {depth} must be at least 1")
    return depth


def _one_hot_types(inputs, attrs):
    indices, values = inputs[0], inputs[2]
    if tuple(values.shape) != (2,):
        raise OperandError(f"values has shape {list(values.shape)}; expected [2] ([off_value, on_value])")
    rank = len(indices.shape)
    axis = normalize_axis(attrs.get("axis", -1), rank + 1)
    shape = tuple(indices.shape)
    return [(shape[:axis] + (_depth(inputs, attrs),) + shape[axis:], dtype_name(values))]


def _one_hot(inputs, attrs):
    (shape, _), = _one_hot_types(inputs, attrs)
    indices, values = np.asarray(inputs[0]), np.asarray(inputs[2])
    depth = _depth(inputs, attrs)
    axis = normalize_axis(attrs.get("axis", -1), indices.ndim + 1)
    idx = indices.astype(np.int64)  # the spec casts non-integer indices to int64
    idx = np.expand_dims(np.where(idx < 0, idx + depth, idx), axis)
    classes = np.arange(depth).reshape([depth if i == axis else 1 for i in range(len(shape))])
    # an index outside [-depth, depth-1] matches no class: an all-off row, as the spec defines
    return [np.where(idx == classes, values[1], values[0]).astype(values.dtype)]


DEFS: dict[str, OpDef] = {
    "GatherElements": OpDef(_gather_elements, _gather_elements_types),
    "GatherND": OpDef(_gather_nd, _gather_nd_types),
    "ScatterElements": OpDef(_scatter_elements, _scatter_elements_types, unsupported=_unsupported_reduction),
    "ScatterND": OpDef(_scatter_nd, _scatter_nd_types, unsupported=_unsupported_reduction),
    "OneHot": OpDef(_one_hot, _one_hot_types, constant_operands={1: "depth"}),
}
