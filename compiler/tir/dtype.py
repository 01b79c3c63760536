"""Data types of the loop IR: a scalar name ("int8", "float32", "bool", ...) with an
optional vector width written as a suffix ("float32x16").

The promotion rules are deliberately explicit: two expressions of different scalar types
never combine silently (the caller inserts a cast); only Python number literals adopt the
type of the expression they meet.
"""
from __future__ import annotations

import functools

SCALARS = {
    "bool": (1, "uint"),
    "int8": (8, "int"),
    "uint8": (8, "uint"),
    "int16": (16, "int"),
    "int32": (32, "int"),
    "int64": (64, "int"),
    "float16": (16, "float"),
    "float32": (32, "float"),
    "float64": (64, "float"),
}

NUMPY_NAMES = {k: k for k in SCALARS}

# The queries below are pure functions of a handful of strings, asked millions of times while
# a kernel's unrolled IR is simplified: each answer is computed once.


@functools.cache
def split(dtype: str) -> tuple[str, int]:
    """'float32x16' -> ('float32', 16); 'int8' -> ('int8', 1)."""
    if dtype in SCALARS:
        return dtype, 1
    base, sep, lanes = dtype.rpartition("x")
    if sep and base in SCALARS and lanes.isdigit():
        return base, int(lanes)
    raise ValueError(f"unknown dtype {dtype!r}; expected one of {sorted(SCALARS)} "
                     "optionally followed by 'xN' for an N-lane vector")


def check(dtype: str) -> str:
    split(dtype)
    return dtype


@functools.cache
def scalar(dtype: str) -> str:
    return split(dtype)[0]


@functools.cache
def lanes(dtype: str) -> int:
    return split(dtype)[1]


@functools.cache
def with_lanes(dtype: str, n: int) -> str:
    base = scalar(dtype)
    return base if n == 1 else f"{base}x{n}"


@functools.cache
def bits(dtype: str) -> int:
    return SCALARS[scalar(dtype)][0]


@functools.cache
def kind(dtype: str) -> str:
    return SCALARS[scalar(dtype)][1]


@functools.cache
def is_float(dtype: str) -> bool:
    return kind(dtype) == "float"


@functools.cache
def is_int(dtype: str) -> bool:
    """Signed or unsigned integer, bool excluded."""
    return kind(dtype) in ("int", "uint") and scalar(dtype) != "bool"


@functools.cache
def is_bool(dtype: str) -> bool:
    return scalar(dtype) == "bool"


@functools.cache
def is_signed(dtype: str) -> bool:
    return kind(dtype) in ("int", "float")


@functools.cache
def itemsize(dtype: str) -> int:
    return max(1, bits(dtype) // 8) * lanes(dtype)


@functools.cache
def int_range(dtype: str) -> tuple[int, int]:
    b = bits(dtype)
    if kind(dtype) == "int":
        return -(1 << (b - 1)), (1 << (b - 1)) - 1
    return 0, (1 << b) - 1
