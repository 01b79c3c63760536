"""Axis attributes: ONNX allows negative axes counted from the end; anything outside the rank is an
error (numpy would wrap some values around, silently computing over another axis)."""
from __future__ import annotations

import operator

from .errors import OperandError


def normalize_axis(axis: int, rank: int, what: str = "axis", allow_rank: bool = False) -> int:
    """`axis` in [-rank, rank - 1] as a non-negative index; `allow_rank` also accepts rank itself
    (and -rank - 1...-1 mapped accordingly), for attributes that name a position between dims
    (Flatten's axis)."""
    top = rank if allow_rank else rank - 1
    low = -rank
    try:
        axis = operator.index(axis)
    except TypeError:
        raise OperandError(f"{what} must be an integer, got {axis!r}") from None
    if not low <= axis <= top:
        raise OperandError(f"{what} {axis} is out of range for a rank-{rank} input: expected {low}..{top}")
    return axis + rank if axis < 0 else axis


def normalize_axes(axes, rank: int, what: str = "axes") -> list[int]:
    """Each of `axes` normalized; an axis named twice is an error."""
    out = [normalize_axis(a, rank, f"{what} entry") for a in axes]
    if len(set(out)) != len(out):
        raise OperandError(f"{what} {list(axes)} names an axis more than once")
    return out
