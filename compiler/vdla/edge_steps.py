"""steps_as_operands: the conversions at the accelerator's edge (VdlaQuantize, VdlaDequantize,
VdlaQuantizeWeights) take their quantization steps as a float32 constant operand instead of
their "scale" attribute.

A step compiled in as a literal made every conversion a kernel of its own: a ViT-Tiny's 147
conversions of 9 shapes compiled 147 kernels, 6 s of its compile. As an operand, one kernel
serves every conversion of a shape (lower_graph shares kernels by signature). The operand is
one step where the tensor's channels share it, else the step of each (padded) channel; the host
ops read either form (vdla.driver.host_ops.vdla.boundary.steps_of)."""
from __future__ import annotations

import numpy as np

from vdla.driver.host_ops.vdla.boundary import DEQUANTIZE, QUANTIZE
from vdla.driver.host_ops.vdla.matmul import QUANTIZE_WEIGHTS

from ..graph.ir import Graph, TensorType


def _channels(graph: Graph, node) -> int:
    """The channels the steps are per: a matrix's columns, an NCHW tensor's C."""
    if node.op == DEQUANTIZE.name:
        shape, matrix = node.attrs["shape"], len(graph.types[node.inputs[0]].shape) == 4
    else:
        shape = graph.types[node.inputs[0]].shape
        matrix = node.op == QUANTIZE_WEIGHTS.name or node.attrs.get("matrix")
    return int(shape[-1] if matrix else shape[1])


def steps_as_operands(graph: Graph) -> Graph:
    for node in graph.nodes:
        if node.op not in (QUANTIZE.name, DEQUANTIZE.name, QUANTIZE_WEIGHTS.name) or "scale" not in node.attrs:
            continue
        steps = np.asarray(node.attrs["scale"], np.float32).reshape(-1)
        if steps.size > 1 and (steps[:_channels(graph, node)] == steps[0]).all():
            steps = steps[:1]
        name = f"{node.name}.steps"
        graph.constants[name] = steps
        graph.types[name] = TensorType.of(steps)
        node.inputs = [node.inputs[0], name]
        node.attrs = {k: v for k, v in node.attrs.items() if k != "scale"}
    return graph
