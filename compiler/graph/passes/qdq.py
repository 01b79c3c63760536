"""strip_qdq: a QDQ model (QuantizeLinear -> DequantizeLinear pairs around float ops, as
onnxruntime's quantize_static writes it) as a float graph plus the quantization ranges
its pairs carry, for compiling it to the accelerator without calibration. Each range keeps
its pair ("qdq": scale, zero point, dtype): where the CPU reads the tensor, the compiled model
quantizes and dequantizes it there as the QDQ model says (quantize_vdla).

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
    return any(n.op in ("QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul") for n in graph.nodes)


def qlinear_to_qdq(graph: Graph) -> Graph:
    """QLinearConv / QLinearMatMul (QOperator models) as DequantizeLinear -> Conv / MatMul ->
    QuantizeLinear, so strip_qdq reads them like a QDQ model."""
    nodes = []
    for node in graph.nodes:
        if node.op == "QLinearConv":
            x, xs, xzp, w, ws, wzp, ys, yzp = (node.inputs + [""] * 9)[:8]
            b = node.inputs[8] if len(node.inputs) > 8 else ""
            conv_in = [f"{node.name}.x", f"{node.name}.w"]
            nodes.append(Node("DequantizeLinear", f"{node.name}.dq_x", [x, xs] + ([xzp] if xzp else []), [conv_in[0]]))
            nodes.append(Node("DequantizeLinear", f"{node.name}.dq_w", [w, ws] + ([wzp] if wzp else []), [conv_in[1]],
                              {"axis": 0}))
            if b:
                scale = f"{node.name}.bias_scale"
                nodes.append(Node("Mul", scale, [xs, ws], [scale]))
                conv_in.append(f"{node.name}.b")
                nodes.append(Node("DequantizeLinear", f"{node.name}.dq_b", [b, scale], [conv_in[2]], {"axis": 0}))
            nodes.append(Node("Conv", node.name, conv_in, [f"{node.name}.y"], dict(node.attrs)))
            nodes.append(Node("QuantizeLinear", f"{node.name}.q", [f"{node.name}.y", ys] + ([yzp] if yzp else []),
                              list(node.outputs)))
        elif node.op == "QLinearMatMul":
            a, as_, azp, bm, bs, bzp, ys, yzp = (node.inputs + [""] * 8)[:8]
            nodes.append(Node("DequantizeLinear", f"{node.name}.dq_a", [a, as_] + ([azp] if azp else []), [f"{node.name}.a"]))
            nodes.append(Node("DequantizeLinear", f"{node.name}.dq_b", [bm, bs] + ([bzp] if bzp else []), [f"{node.name}.b"],
                              {"axis": 1}))
            nodes.append(Node("MatMul", node.name, [f"{node.name}.a", f"{node.name}.b"], [f"{node.name}.y"]))
            nodes.append(Node("QuantizeLinear", f"{node.name}.q", [f"{node.name}.y", ys] + ([yzp] if yzp else []),
                              list(node.outputs)))
        else:
            nodes.append(node)
    graph.nodes = nodes
    return graph


_RESHAPES = ("Flatten", "Reshape", "Squeeze", "Unsqueeze")


def _reshape_before_quantize(graph: Graph) -> Graph:
    """Reshape(Q(x)) -> Q(Reshape(x)) for a per-tensor Q: a reshape between a quantizer and its
    dequantizer would hide the pair."""
    producers = {o: n for n in graph.nodes for o in n.outputs if o}
    nodes = []
    for node in graph.nodes:
        q = producers.get(node.inputs[0]) if node.op in _RESHAPES and node.inputs else None
        if q is not None and q.op == "QuantizeLinear" and np.asarray(graph.constants.get(q.inputs[1], [0, 0])).size == 1:
            moved = f"{node.name}.float"
            nodes.append(Node(node.op, node.name, [q.inputs[0]] + node.inputs[1:], [moved], dict(node.attrs)))
            nodes.append(Node("QuantizeLinear", f"{node.name}.q", [moved] + q.inputs[1:], list(node.outputs),
                              dict(q.attrs)))
        else:
            nodes.append(node)
    graph.nodes = nodes
    return graph


def _propagate_ranges(graph: Graph, ranges: dict) -> None:
    """Max pooling, ReLU and reshapes keep a tensor's maximum: a range known on one side holds
    on the other (onnxruntime's QOperator form quantizes only after a conv's BN/ReLU/pool tail)."""
    changed = True
    while changed:
        changed = False
        for node in graph.nodes:
            if node.op not in ("MaxPool", "Relu", "GlobalMaxPool") + _RESHAPES or not node.inputs:
                continue
            x, y = node.inputs[0], node.outputs[0]
            if y in ranges and x not in ranges and node.op != "Relu":
                ranges[x] = dict(ranges[y])
                changed = True
            elif x in ranges and y not in ranges:
                ranges[y] = dict(ranges[x])
                if node.op == "Relu" and "lo" in ranges[y]:
                    ranges[y]["lo"] = max(0.0, ranges[y]["lo"])
                changed = True
            elif y in ranges and x not in ranges:   # a ReLU output's range bounds its input's positive side
                ranges[x] = {k: v for k, v in ranges[y].items() if k not in ("lo", "hi", "qdq")}    # (not its sign)
                changed = True


def strip_qdq(graph: Graph) -> tuple[Graph, dict[str, dict]]:
    g = _reshape_before_quantize(qlinear_to_qdq(graph.copy()))
    producers = {o: n for n in g.nodes for o in n.outputs if o}
    readers: dict[str, list] = {}
    for n in g.nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
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
                          "percentile": max(abs(lo), abs(hi)), "lo": lo, "hi": hi,
                          "qdq": {"scale": float(scale), "zero_point": int(zp), "dtype": np.dtype(zp.dtype).name}}
        target = tensor
        if lo >= 0.0:                    # the quantizer clips at zero: a folded ReLU
            if tensor not in clips:
                clips[tensor] = Node("Clip", f"{q.name}.relu", [tensor], [f"{tensor}.relu"], {"min": 0.0, "max": hi})
                ranges[f"{tensor}.relu"] = ranges[tensor]
            target = clips[tensor].outputs[0]
        replace[node.outputs[0]] = target
        drop.add(node.name)
        if all(r.op == "DequantizeLinear" for r in readers.get(q.outputs[0], [])):
            drop.add(q.name)
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
    _propagate_ranges(g, ranges)
    return g, ranges
