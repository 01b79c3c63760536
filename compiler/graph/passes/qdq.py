"""strip_qdq: a QDQ model (QuantizeLinear -> DequantizeLinear pairs around float ops, as
onnxruntime's quantize_static writes it) as a float graph plus the quantization ranges
its pairs carry, for compiling it to the accelerator without calibration.

Each activation pair Q(T) -> DQ is removed and its consumers read T. A pair whose int8 range
starts at 0 (zero point at the bottom of the range) also clips the negative values away:
quantizers fold ReLUs into it, so the pair becomes a Clip(0, top) node that the accelerator
fuses as a ReLU. The range of T is max(|lowest|, |highest|) of the pair's codes. Weights and
biases stay DequantizeLinear of constants, which constant folding turns into floats (their
per-channel int8 values come back unchanged when quantize_vdla requantizes them
symmetrically with the same maxima)."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node


def has_qdq(graph: Graph) -> bool:
    return any(n.op in ("QuantizeLinear", "DequantizeLinear") for n in graph.nodes)


def strip_qdq(graph: Graph) -> tuple[Graph, dict[str, dict]]:
    g = graph.copy()
    producers = {o: n for n in g.nodes for o in n.outputs if o}
    replace: dict[str, str] = {}
    ranges: dict[str, dict] = {}
    drop, clips = set(), {}
    for node in g.nodes:
        if node.op != "DequantizeLinear" or node.inputs[0] in g.constants:
            continue
        q = producers.get(node.inputs[0])
        if q is None or q.op != "QuantizeLinear" or q.inputs[0] in g.constants:
            continue
        tensor = q.inputs[0]
        scale = np.asarray(g.constants[q.inputs[1]], np.float64)
        if scale.size != 1:
            continue                     # a per-channel activation quantizer: keep it as it is
        zp = np.asarray(g.constants[q.inputs[2]]) if len(q.inputs) > 2 and q.inputs[2] else np.zeros((), np.uint8)
        info = np.iinfo(zp.dtype)
        lo = float(scale) * (info.min - int(zp))
        hi = float(scale) * (info.max - int(zp))
        ranges[tensor] = {"max": max(abs(lo), abs(hi)), "range": max(abs(lo), abs(hi)), "method": "qdq",
                          "percentile": max(abs(lo), abs(hi))}
        target = tensor
        if lo >= 0.0:                    # the quantizer clips at zero: a folded ReLU
            if tensor not in clips:
                clips[tensor] = Node("Clip", f"{q.name}.relu", [tensor], [f"{tensor}.relu"], {"min": 0.0, "max": hi})
                ranges[f"{tensor}.relu"] = ranges[tensor]
            target = clips[tensor].outputs[0]
        replace[node.outputs[0]] = target
        drop.update({node.name, q.name})
    kept = []
    for node in g.nodes:
        if node.name in drop:
            continue
        node.inputs = [replace.get(n, n) for n in node.inputs]
        kept.append(node)
        for out in node.outputs:
            if out in clips:
                kept.append(clips[out])
                if out in g.types:
                    g.types[clips[out].outputs[0]] = g.types[out]
    for tensor, clip in clips.items():          # a graph input whose quantizer clips
        if tensor in g.inputs:
            kept.insert(0, clip)
            g.types[clip.outputs[0]] = g.types[tensor]
    for out in g.outputs:                        # the model's outputs keep their names
        if out in replace:
            kept.append(Node("Identity", f"{out}.qdq_output", [replace[out]], [out]))
    g.nodes = kept
    return g, ranges
