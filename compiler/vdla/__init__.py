"""The VDLA target: which nodes of a float graph the accelerator takes (placement.py), their
int8 form (quantize.py, requant.py, ranges.py) and their kernels (lower.py), from one record
per accelerator op (ops/, gathered by registry.py; the record is op.py's VdlaOp). front.py
runs the front half of the pipeline; compile_model.compile_for_vdla the whole of it.
topi.vdla's kernels sit below this package; nothing below imports it."""
from .front import quantize_for_vdla
from .lower import Kernels, KernelsDoNotFit, kernel_spec, lower_vdla
from .op import KernelSpec, VdlaOp
from .placement import place_nodes
from .quantize import quantize_vdla
from .registry import OPS, op_for_source, op_named

__all__ = ["KernelSpec", "Kernels", "KernelsDoNotFit", "OPS", "VdlaOp", "kernel_spec", "lower_vdla", "op_for_source",
           "op_named", "place_nodes", "quantize_for_vdla", "quantize_vdla"]
