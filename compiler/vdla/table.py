"""Activations through the ALU's lookup table (ALU LUT, vdla.hw.alu_ops): a chain of elementwise
nodes after a GEMM-core op (SiLU as Sigmoid and Mul, GELU as Div, Erf, Add and two Muls,
HardSwish, Sigmoid, Tanh) is, between two int8 quantizations, a map of 256 codes to 256 codes.
The op's epilogue requantizes to the chain input's grid and ends with that map instead of its
clip, so the activation costs one ALU cycle per element and no trip to the CPU.

Placement finds the chain (`table_chain`); quantization computes the map (`activation_table`)
with the chain's own host ops (vdla.driver.host_ops), so the table is what the float model
computes at those 256 points, rounded once, through the quantize-dequantize pairs a QDQ model
puts on the chain's inner tensors."""
from __future__ import annotations

import numpy as np

from vdla.driver import host_ops
from vdla.hw.alu_ops import TABLE_ENTRIES, TABLE_MAX, TABLE_MIN

from .requant import qdq_grid, tensor_step

# elementwise ops whose result at each element depends on that element alone (with scalar
# constants): a chain of them maps each code on its own
ELEMENTWISE = frozenset({"Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Gelu", "Relu", "Clip", "LeakyRelu",
                         "Elu", "Selu", "Celu", "Softplus", "Softsign", "Exp", "Neg", "Abs", "Mish",
                         "Mul", "Add", "Sub", "Div"})
VIEWS = frozenset({"Reshape", "Flatten"})
MAX_CHAIN = 8


def _scalar(graph, name) -> bool:
    return name in graph.constants and np.size(graph.constants[name]) == 1


def table_chain(graph, node, consumers, is_view=lambda n: False, order: dict | None = None) -> list | None:
    """The nodes, in graph order, of the elementwise chain that reads only `node`'s output (and
    scalar constants) and ends in one tensor, the largest such; None if there is none. A chain
    of a lone Relu or Clip is the ALU's own clip (placement.fused_activation), not a table.
    `is_view(n)`: whether a Reshape/Flatten n holds the same bytes in the packed layouts (a
    linear layer's rows viewed back as its token sequence): such a view joins the chain.
    `order`: each node's position in the graph (computed here if not given; a caller that asks
    for every node's chain gives it once)."""
    x = node.outputs[0]
    if x in graph.outputs:
        return None
    order = order if order is not None else {n.name: k for k, n in enumerate(graph.nodes)}
    chain, made, best = [], {x}, None
    while len(chain) < MAX_CHAIN:
        names = {n.name for n in chain}
        grown = [n for t in made for n in consumers.get(t, []) if n.name not in names and (
                 (n.op in ELEMENTWISE and all((i in made) or _scalar(graph, i) for i in n.inputs if i))
                 or (n.op in VIEWS and n.inputs[0] in made and is_view(n)))]
        if not grown:
            break
        for n in sorted({n.name: n for n in grown}.values(), key=lambda n: order[n.name]):
            chain.append(n)
            made.add(n.outputs[0])
        if _closed(graph, chain, x, consumers):
            best = list(chain)
    if best is None or all(n.op in VIEWS or n.op in ("Relu", "Clip") for n in best):
        return None
    return best


def _closed(graph, chain, x, consumers) -> bool:
    """Every tensor of the chain (x included) but its last is read only inside it."""
    inside = {n.name for n in chain}
    last = chain[-1].outputs[0]
    for t in [x] + [n.outputs[0] for n in chain[:-1]]:
        if t in graph.outputs or any(c.name not in inside for c in consumers.get(t, [])):
            return False
    return last not in {i for n in chain for i in n.inputs}


def input_grid(stats, tensor) -> tuple[float, int]:
    """(step, zero point) of the chain's input codes: a QDQ model's own grid, else symmetric over
    the calibrated range. (Spreading the calibrated [lo, hi] over all 256 codes measured worse:
    MobileNetV3-small 29.92 -> 29.02 dB, EfficientNet-B0 22.39 -> 21.76.)"""
    pair = stats.get(tensor, {}).get("qdq")
    if pair is not None:
        return qdq_grid(pair)
    return tensor_step(stats, tensor), 0


def activation_table(graph, chain, x, grid_in, grid_out, stats) -> np.ndarray:
    """The TABLE_ENTRIES int8 entries: entry i holds the output code of input code i + TABLE_MIN."""
    (s_x, z_x), (s_y, z_y) = grid_in, grid_out
    codes = np.arange(TABLE_MIN, TABLE_MAX + 1)
    assert codes.size == TABLE_ENTRIES
    dtype = graph.types[x].dtype
    values = {x: ((codes - z_x) * s_x).astype(dtype)}
    for n in chain:
        if n.op in VIEWS:
            values[n.outputs[0]] = values[n.inputs[0]]
            continue
        ins = [values[i] if i in values else graph.constants[i] for i in n.inputs if i]
        out = np.asarray(host_ops.run(n.op, ins, n.attrs)[0])
        pair = stats.get(n.outputs[0], {}).get("qdq")
        if pair is not None and n is not chain[-1]:       # the model's own quantize-dequantize
            lo, hi = (0, 255) if pair["dtype"] == "uint8" else (-128, 127)
            q = np.clip(np.rint(out / pair["scale"]) + pair["zero_point"], lo, hi)
            out = ((q - pair["zero_point"]) * pair["scale"]).astype(out.dtype)
        values[n.outputs[0]] = out.reshape(codes.shape)
    y = values[chain[-1].outputs[0]].astype(np.float64)
    return np.clip(np.rint(y / s_y) + z_y, TABLE_MIN, TABLE_MAX).astype(np.int8)


# Output elements below which the clip stays MIN and MAX: the table's load (one LOAD LUT of
# TABLE_ENTRIES bytes, about 60 cycles on the pynq bus) must cost less than the ALU cycle per
# element that the lookup saves.
CLIP_TABLE_MIN_ELEMENTS = 128


def clip_as_table(config, ep, out_shape, vta_compat: bool) -> bool:
    """Whether an epilogue's clip (MAX lo then MIN hi, two ALU passes) becomes one lookup in a
    table that holds the clip: where the config has a table, outside VTA mode, on enough elements."""
    elements = int(np.prod(out_shape[:-2]))
    return (not vta_compat and config.lut_depth > 0 and ep.lo is not None and ep.hi is not None
            and not ep.table and elements >= CLIP_TABLE_MIN_ELEMENTS)


def clip_table(ep) -> np.ndarray:
    """The TABLE_ENTRIES entries of clip(code, lo, hi): the lookup saturates to int8 first, as the
    clip bounds lie in int8, so it is the clip exactly."""
    return np.clip(np.arange(TABLE_MIN, TABLE_MAX + 1), ep.lo, ep.hi).astype(np.int8)
