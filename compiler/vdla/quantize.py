"""Quantization of the accelerator's part of a placed float graph (placement.py): the
accelerator nodes become the int8 nodes of their VdlaOp records on tensors in the SPEC §7
packed layout (vdla.driver.host_ops.vdla states their semantics): per-channel symmetric int8
weights, int8 activations with calibrated scales, int32 biases, requantization by a
per-channel fixed-point multiplier and shifts on the ALU (requant.py). Quantize/dequantize
(with packing and unpacking) are inserted only where a tensor crosses between the accelerator
and the CPU.

VTA mode (vta_compat=True): VTA's ALU has no MUL and its DMA pads with zeros only, so
activations take zero point 0 and one scale per tensor, weights one power-of-two step of
their output's scale (requantization is a rounded shift), and the ops whose factors VTA
multiplies on the GEMM core (pooling, Add) get those factors as int8 weight blocks here.
"""
from __future__ import annotations

import numpy as np

from ..graph.ir import Graph
from .moves import quantize_move
from .quantizer import KeepOnCpu, Quantizer
from .registry import op_for_source
from .requant import ShiftRange, Unquantizable


def quantize_vdla(graph: Graph, place: dict, stats: dict, config, vta_compat: bool = False) -> Graph:
    """The graph with its accelerator nodes replaced by their ops' int8 nodes (see the module
    docstring); graph.meta["placement"] keeps `place`."""
    g = graph.copy()
    q = Quantizer(g, config, place, stats, vta_compat)
    for node in g.nodes:
        info = place.get(node.name, {"device": "cpu"})
        if info.get("fused_into"):
            continue
        if info.get("packed") and quantize_move(q, node):
            continue
        if info.get("packed"):
            info.update(packed=False, reason=f"{node.op} of codes with different zero points: in fp32 on the CPU")
        op = op_for_source(node.op) if info["device"] == "vdla" else None
        if op is not None:
            act = q.fused_activation(node) if op.fuses_activation else None
            try:
                op.quantize(q, node, act)
                continue
            except ShiftRange as why:
                raise Unquantizable(node.name, str(why)) from None
            except KeepOnCpu as why:
                info.update(device="cpu", reason=str(why))
        if info["device"] != "vdla":
            node.inputs = [q.cpu_input(n) if n else n for n in node.inputs]
            q.nodes.append(node)
            q.materialized.update(n for n in node.outputs if n)
            continue
        if node.op in ("Relu", "Clip"):
            q.identity(node)
        else:
            q.reshape(node)
    for out in g.outputs:
        q.float_input(out)
    g.nodes = q.nodes
    g.meta["placement"] = place
    g.meta["vdla_scales"] = {x: (name, np.asarray(scale).tolist(), q.zp.get(x, 0))
                             for name, (x, scale) in q.packed.items()}
    g.meta["vdla_group_rows"] = q.group_rows
    return g
