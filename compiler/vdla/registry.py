"""The accelerator ops, gathered from the modules of ops/ (each defines OP, a VdlaOp), and the
names of the conversions at the accelerator's edge. Everything that asks "which accelerator op
is this node" asks here."""
from __future__ import annotations

import importlib
import pkgutil

from vdla.driver.host_ops.vdla import SEMANTICS, boundary

from . import ops as _ops_package
from .op import VdlaOp

QUANTIZE = boundary.QUANTIZE.name
DEQUANTIZE = boundary.DEQUANTIZE.name


def _gather() -> dict[str, VdlaOp]:
    found = {}
    for info in sorted(pkgutil.iter_modules(_ops_package.__path__), key=lambda i: i.name):
        op = getattr(importlib.import_module(f"{_ops_package.__name__}.{info.name}"), "OP", None)
        if isinstance(op, VdlaOp):
            assert op.name not in found, f"accelerator op {op.name} is defined twice"
            found[op.name] = op
    return found


OPS: dict[str, VdlaOp] = _gather()
_BY_SOURCE = {src: op for op in OPS.values() for src in op.sources}
_BY_RECORD = {op.tuning.record_op: op for op in OPS.values() if op.tuning is not None}


def op_named(name: str) -> VdlaOp | None:
    """The accelerator op of a quantized graph's node op, or None."""
    return OPS.get(name)


def op_for_source(onnx_op: str) -> VdlaOp | None:
    """The accelerator op that may take a float graph's node of `onnx_op`, or None."""
    return _BY_SOURCE.get(onnx_op)


def op_for_record(record_op: str) -> VdlaOp | None:
    """The accelerator op whose tuning records are named `record_op`, or None."""
    return _BY_RECORD.get(record_op)


def tunable_ops() -> list[VdlaOp]:
    return [op for op in OPS.values() if op.tuning is not None]


def is_edge(op: str) -> bool:
    """A conversion at the accelerator's edge (quantize, dequantize, weights made at run time):
    a host step either way."""
    return op in SEMANTICS and not SEMANTICS[op].kernel
