"""One record per operator: what it computes, what types it yields, and which of its operands
and attribute values it needs to know at compile time.

An `OpDef` is the whole of an operator for everything outside its compiled kernels:

- `run(inputs, attrs) -> outputs`: the numpy statement of the ONNX semantics (host steps,
  constant folding and the reference interpreter all call it);
- `types(inputs, attrs) -> [(shape, dtype name)]`: the output types, reading only the shapes and
  dtypes of data inputs (a `Shaped`) and the values of constant ones (arrays), so shape
  inference never materializes a tensor;
- `constant_operands`: input index -> attribute name, for operands the output shape depends on
  (Expand's shape, TopK's K): they must be compile-time constants and are moved into `attrs`
  before anything runs, so `run` and `types` find them in either place (`operand`);
- `typed_from_values`: the data inputs whose values (not only shapes) give the output shape
  (NonZero's input): the op is typed once they are compile-time constants, and refuses otherwise;
- `unsupported(attrs) -> message | None`: an attribute value the ONNX definition allows but vdla
  does not implement; the frontend turns the message into UnsupportedModelError naming the node.

The frontend accepts every attribute the op's ONNX schema declares (at the model's opset) and
fills in the schema's defaults, so `run` and `types` read `attrs[name]` for any declared
attribute that has a default.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .errors import OperandError, RuntimeShape

# What a type rule sees of a data input: its shape and dtype name, never its elements.
Shaped = namedtuple("Shaped", "shape ndim dtype")


def dtype_name(x) -> str:
    """The numpy dtype name of an array or a Shaped."""
    return np.dtype(x.dtype).name


@dataclass(frozen=True)
class OpDef:
    run: Callable[[list, dict], list]
    types: Callable[[list, dict], list]
    constant_operands: dict = field(default_factory=dict)
    unsupported: Callable[[dict], str | None] | None = None
    typed_from_values: tuple = ()


# -- rules shared by many ops ----------------------------------------------------------------

def typed_at_run_time(why: str):
    """The type rule of an op whose outputs only running it tells (a subgraph's, a sequence):
    the compiler makes it a host step typed by ONNX's shape inference."""
    def rule(inputs, attrs):
        raise RuntimeShape(why)
    return rule


def same_as_input(index: int = 0):
    """Outputs typed like input `index` (elementwise unary ops)."""
    return lambda inputs, attrs: [(tuple(inputs[index].shape), dtype_name(inputs[index]))]


def broadcast_shape(*shapes) -> tuple:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise OperandError(f"input shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast "
                           "(numpy rules: trailing dims equal or 1)") from None


def broadcast(dtype: str | None = None):
    """The broadcast of all present inputs, typed `dtype` or like the first input."""
    def rule(inputs, attrs):
        present = [x for x in inputs if x is not None]
        return [(broadcast_shape(*[x.shape for x in present]), dtype or dtype_name(present[0]))]
    return rule


def unary(fn: Callable, keep_dtype: bool = True) -> OpDef:
    """An elementwise op of one input: `fn(x, attrs) -> array`, cast back to x's dtype."""
    def run(inputs, attrs):
        x = inputs[0]
        out = fn(x, attrs)
        return [np.asarray(out, dtype=x.dtype) if keep_dtype else np.asarray(out)]
    return OpDef(run, same_as_input())


def binary(fn: Callable, dtype: str | None = None) -> OpDef:
    """A broadcasting op of two inputs: `fn(a, b) -> array`, typed like a or as `dtype`."""
    def run(inputs, attrs):
        a, b = inputs[0], inputs[1]
        out = fn(a, b)
        return [np.asarray(out, dtype=dtype or a.dtype)]
    return OpDef(run, broadcast(dtype))
