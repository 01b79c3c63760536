"""ONNX's sequence and optional values and their ops, one OpDef each.

A sequence is a Python list of arrays, an optional an array, a list or None. Their ops run on the
host only: a sequence has no static shape, so every type rule raises RuntimeShape and the
compiler makes the node a host step typed by ONNX's shape inference (the executor keeps the list).
SequenceMap runs its body (subgraph.Subgraph) once per element.
"""
from __future__ import annotations

import numpy as np

from ._operands import operand
from .axes import normalize_axis
from .errors import OperandError
from .opdef import OpDef, typed_at_run_time
from .subgraph import Subgraph, split_captures


def _run_time(op: str):
    return typed_at_run_time(f"{op} makes or reads a sequence or an optional, a value known only at run time")


def _position(value, length: int, what: str, inserting: bool = False) -> int:
    """A position operand in [-length, length - 1] (or up to `length` where it inserts)."""
    p = int(np.asarray(value).reshape(()))
    hi = length if inserting else length - 1
    if not -length <= p <= hi:
        raise OperandError(f"{what} {p} is outside [{-length}, {hi}] for a sequence of {length}")
    return p + length if p < 0 else p


def _sequence(value, what: str = "input_sequence") -> list:
    if not isinstance(value, list):
        raise OperandError(f"{what} must be a sequence, got {type(value).__name__}")
    return value


def _insert(inputs, attrs):
    seq = list(_sequence(inputs[0]))
    at = len(seq) if len(inputs) < 3 or inputs[2] is None else _position(inputs[2], len(seq), "position", True)
    seq.insert(at, np.asarray(inputs[1]))
    return [seq]


def _erase(inputs, attrs):
    seq = list(_sequence(inputs[0]))
    if not seq:
        raise OperandError("SequenceErase of an empty sequence")
    at = len(seq) - 1 if len(inputs) < 2 or inputs[1] is None else _position(inputs[1], len(seq), "position")
    del seq[at]
    return [seq]


def _at(inputs, attrs):
    seq = _sequence(inputs[0])
    return [np.asarray(seq[_position(inputs[1], len(seq), "position")])]


def _split_to_sequence(inputs, attrs):
    x = np.asarray(inputs[0])
    axis = normalize_axis(attrs.get("axis", 0), x.ndim)
    split = operand(inputs, 1, attrs, "split")
    length = x.shape[axis]
    if split is None:
        parts = np.split(x, length, axis=axis)
        return [[np.squeeze(p, axis) for p in parts] if not attrs.get("keepdims", 1) else parts]
    sizes = np.atleast_1d(np.asarray(split, np.int64))
    if np.asarray(split).ndim == 0:        # chunks of one size, the last one shorter
        step = int(sizes[0])
        if step <= 0:
            raise OperandError(f"split {step} must be positive")
        sizes = [min(step, length - s) for s in range(0, length, step)]
    if sum(int(s) for s in sizes) != length or any(int(s) < 0 for s in sizes):
        raise OperandError(f"split {list(map(int, sizes))} must be non-negative and sum to {length}, the length of "
                           f"axis {axis}")
    return [np.split(x, np.cumsum(sizes)[:-1].astype(np.int64), axis=axis)]


def _concat_from_sequence(inputs, attrs):
    seq = [np.asarray(t) for t in _sequence(inputs[0])]
    if not seq:
        raise OperandError("ConcatFromSequence of an empty sequence")
    if attrs.get("new_axis", 0):
        return [np.stack(seq, axis=normalize_axis(attrs["axis"], seq[0].ndim + 1))]
    return [np.concatenate(seq, axis=normalize_axis(attrs["axis"], seq[0].ndim))]


def _sequence_map(inputs, attrs):
    declared, captured = split_captures(inputs, attrs)
    body = Subgraph(attrs["body_graph"])
    first = _sequence(declared[0])
    for k, extra in enumerate(declared[1:], 1):
        if isinstance(extra, list) and len(extra) != len(first):
            raise OperandError(f"additional input {k} has {len(extra)} elements, input_sequence {len(first)}")
    outs: list[list] = [[] for _ in body.outputs]
    for i, element in enumerate(first):
        feeds = [element] + [extra[i] if isinstance(extra, list) else extra for extra in declared[1:]]
        for collected, value in zip(outs, body.run(captured, feeds)):
            collected.append(np.asarray(value))
    return outs


def _get_element(inputs, attrs):
    if inputs[0] is None:
        raise OperandError("OptionalGetElement of an empty optional")
    return [inputs[0]]


DEFS: dict[str, OpDef] = {
    "SequenceEmpty": OpDef(lambda inputs, attrs: [[]], _run_time("SequenceEmpty")),
    "SequenceConstruct": OpDef(lambda inputs, attrs: [[np.asarray(x) for x in inputs]], _run_time("SequenceConstruct")),
    "SequenceInsert": OpDef(_insert, _run_time("SequenceInsert")),
    "SequenceErase": OpDef(_erase, _run_time("SequenceErase")),
    "SequenceAt": OpDef(_at, _run_time("SequenceAt")),
    "SequenceLength": OpDef(lambda inputs, attrs: [np.array(len(_sequence(inputs[0])), np.int64)],
                            _run_time("SequenceLength")),
    "SplitToSequence": OpDef(_split_to_sequence, _run_time("SplitToSequence")),
    "ConcatFromSequence": OpDef(_concat_from_sequence, _run_time("ConcatFromSequence")),
    "SequenceMap": OpDef(_sequence_map, _run_time("SequenceMap")),
    "Optional": OpDef(lambda inputs, attrs: [inputs[0] if inputs else None], _run_time("Optional")),
    "OptionalHasElement": OpDef(lambda inputs, attrs: [np.array(bool(inputs) and inputs[0] is not None)],
                                _run_time("OptionalHasElement")),
    "OptionalGetElement": OpDef(_get_element, _run_time("OptionalGetElement")),
}
