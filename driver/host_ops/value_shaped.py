"""Operators of the default ONNX domain whose output shape depends on the values of an input:
Compress, NonZero, Unique, one OpDef each.

Compress's condition is an operand (a constant operand: exporters compute it from constants; a
run-time one makes the node a host step). NonZero and Unique depend on their data input itself:
their type rules compute the shape when the input is a compile-time constant (then
fold_constants folds the node), and otherwise raise RuntimeShape: the compiler makes the node a
host step whose outputs the executor keeps as they come (graph/passes/runtime_shaped.py).
"""
from __future__ import annotations

import numpy as np

from ._operands import operand
from .axes import normalize_axis
from .errors import OperandError, RuntimeShape
from .opdef import OpDef, dtype_name


def _needs_values(op: str, what: str, x):
    """Raise unless the type rule got the input's values (an array)."""
    if isinstance(x, np.ndarray):
        return
    raise RuntimeShape(
        f"the output shape depends on the values of {op}'s input {what}, which are known only at run time "
        f"(it is not a compile-time constant)")


# -- Compress -------------------------------------------------------------------------------------

def _selected(x_shape, inputs, attrs) -> tuple[np.ndarray, int | None]:
    """The condition (as long as the selected axis at most) and the axis (None: flattened)."""
    condition = operand(inputs, 1, attrs, "condition")
    if condition is None:
        raise OperandError("the condition operand is required")
    condition = np.asarray(condition)
    if condition.ndim != 1:
        raise OperandError(f"condition must be 1-D, got shape {list(condition.shape)}")
    axis = attrs.get("axis")
    if axis is not None:
        axis = normalize_axis(axis, len(x_shape))
        length = x_shape[axis]
    else:
        length = int(np.prod(x_shape, dtype=np.int64))
    condition = condition.astype(bool)
    # numpy.compress (which the spec follows) allows entries past the end only if they select nothing
    if condition[length:].any():
        raise OperandError(f"condition selects entry {length + int(np.argmax(condition[length:]))}, past the "
                           f"{length} {'slices along axis ' + str(axis) if axis is not None else 'elements'} of "
                           f"the input {list(x_shape)}")
    return condition[:length], axis


def _compress_types(inputs, attrs):
    x = inputs[0]
    condition, axis = _selected(x.shape, inputs, attrs)
    kept = int(np.count_nonzero(condition))
    if axis is None:
        return [((kept,), dtype_name(x))]
    return [(tuple(x.shape[:axis]) + (kept,) + tuple(x.shape[axis + 1:]), dtype_name(x))]


def _compress(inputs, attrs):
    x = inputs[0]
    condition, axis = _selected(x.shape, inputs, attrs)
    return [np.asarray(np.compress(condition, x, axis=axis), order="C")]


# -- NonZero, Unique --------------------------------------------------------------------------------

def _non_zero(inputs, attrs):
    x = np.asarray(inputs[0])
    # numpy refuses a 0-d input; ONNX counts a scalar as rank 0, so there are no coordinates to list
    if x.ndim == 0:
        return [np.zeros((0, int(x != 0)), np.int64)]
    return [np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


def _non_zero_types(inputs, attrs):
    _needs_values("NonZero", "X", inputs[0])
    (y,) = _non_zero(inputs, attrs)
    return [(y.shape, "int64")]


def _unique(inputs, attrs):
    x = np.asarray(inputs[0])
    axis = attrs.get("axis")
    if axis is not None:
        axis = normalize_axis(axis, x.ndim)
    else:
        x = x.reshape(-1)
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                               axis=0 if axis is None else axis)
    inverse = inverse.reshape(-1)
    if not attrs.get("sorted", 1):
        # renumber the sorted uniques in order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = np.take(values, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return [np.asarray(values, order="C"), first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]


def _unique_types(inputs, attrs):
    _needs_values("Unique", "X", inputs[0])
    return [(y.shape, dtype_name(y)) for y in _unique(inputs, attrs)]


def _unsupported_sorted(attrs):
    if attrs.get("sorted", 1) not in (0, 1):
        return f"sorted {attrs['sorted']}; expected 0 or 1"
    return None


DEFS: dict[str, OpDef] = {
    "Compress": OpDef(_compress, _compress_types, constant_operands={1: "condition"}),
    "NonZero": OpDef(_non_zero, _non_zero_types, typed_from_values=(0,)),
    "Unique": OpDef(_unique, _unique_types, unsupported=_unsupported_sorted, typed_from_values=(0,)),
}
