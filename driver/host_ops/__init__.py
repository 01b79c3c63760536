"""numpy implementations of the graph operators: the runtime's fallback for nodes that have
no compiled kernel, and the one statement of each op's semantics that the compiler's
reference interpreter and constant folding also use.

Each op is `fn(inputs: list[np.ndarray | None], attrs: dict) -> list[np.ndarray]` with the
ONNX meaning of the op and the attributes as the graph frontend normalizes them (explicit
pads, resolved auto_pad, operands such as Reshape's shape either in `attrs` or as inputs).
Ops whose output shape depends on attribute or operand values also have a shape rule,
`SHAPES[op](inputs, attrs) -> [shapes]`, that reads only the shapes of data inputs.
"""
from __future__ import annotations

import numpy as np

from . import activations, attention, control_flow, crop_scatter, normalization, reduction, elementwise, gather_scatter, layout, math_ops, nn, quant, recurrent, resize, sequence_state, sequences, shape, subgraph, shape_ops, signal, spatial, value_shaped, vdla, winograd
from .errors import HostOpError, OperandError
from .opdef import OpDef, Shaped

# Ops with a whole record (vdla.driver.host_ops.opdef): semantics, type rule, constant operands
# and unimplemented attribute values in one place. The older ops below have a numpy function in
# OPS and, where the output shape depends on attribute values, a rule in SHAPES; the compiler's
# shape inference states their types.
DEFS: dict[str, OpDef] = {}
for _module in (math_ops, attention, activations, control_flow, recurrent, resize, spatial, shape_ops, gather_scatter, value_shaped, normalization, reduction, signal, crop_scatter, sequence_state, sequences):
    _clash = set(DEFS) & set(_module.DEFS)
    assert not _clash, f"{_module.__name__} defines {_clash} again"
    DEFS.update(_module.DEFS)

OPS: dict = {name: d.run for name, d in DEFS.items()}
for _module in (elementwise, layout, nn, quant, shape, vdla, winograd):
    assert not set(OPS) & set(_module.OPS), f"{_module.__name__} restates {set(OPS) & set(_module.OPS)}"
    OPS.update(_module.OPS)
SHAPES: dict = {**shape.SHAPES, **nn.SHAPES}
subgraph.OPS.update(OPS)     # what a control-flow op's subgraph runs (subgraph cannot import this package)

__all__ = ["DEFS", "OPS", "SHAPES", "HostOpError", "OpDef", "OperandError", "Shaped", "run", "run_fused",
           "output_shapes", "output_types"]


def run(op: str, inputs: list, attrs: dict) -> list[np.ndarray]:
    fn = OPS.get(op)
    if fn is None:
        raise HostOpError(f"no host implementation of op {op!r}; host ops: {', '.join(sorted(OPS))}")
    return fn(inputs, attrs)


def output_shapes(op: str, inputs: list, attrs: dict) -> list[tuple[int, ...]]:
    """The output shapes of `op` without running it; data inputs need only a `.shape`."""
    fn = SHAPES.get(op)
    if fn is None:
        raise HostOpError(f"op {op!r} has no shape rule; ops with one: {', '.join(sorted(SHAPES))}")
    return [tuple(int(d) for d in s) for s in fn(inputs, attrs)]


def output_types(op: str, inputs: list, attrs: dict) -> list[tuple[tuple[int, ...], str]]:
    """The output (shape, dtype name) of an op with a record in DEFS; data inputs need only a
    `.shape` and `.dtype` (a `Shaped`), constant ones are arrays."""
    return [(tuple(int(d) for d in shape), np.dtype(dtype).name) for shape, dtype in DEFS[op].types(inputs, attrs)]


def run_fused(body: list[dict], values: dict[str, np.ndarray]) -> None:
    """Run the nodes of a fused group in order; `values` maps tensor names to arrays and
    receives the results. Each body entry is {op, inputs, outputs, attrs}."""
    for node in body:
        args = [values[n] if n else None for n in node["inputs"]]
        for name, out in zip(node["outputs"], run(node["op"], args, node["attrs"])):
            if name:
                values[name] = out
