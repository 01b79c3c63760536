"""VdlaMul: ONNX Mul of two activations on the ALU: a same-shape product (a gated unit) or a
feature map times a gate of one value per channel (a squeeze-excitation block, MobileNetV3's and
EfficientNet's), requantized to the output's calibrated grid by a fixed-point factor per channel
(topi.vdla.mul). Without it each SE block left the accelerator twice.

Taken where both operands are images the accelerator computes (a gate the CPU computed stays on
the CPU with the product: quantizing it costs a crossing for one multiply). VTA mode: VTA has no
ALU MUL or LOAD ACC_8BIT, so the Mul stays on the CPU."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from vdla.driver.host_ops.vdla import mul as semantics

from ...topi import vdla as V
from ...topi.vdla.mul import MulLayer, compile_mul, default_mul_knobs, mul_tiling_problem
from ..op import KernelSpec, VdlaOp
from ..quantizer import KeepOnCpu
from ..requant import fixed_point

FACTOR_BITS = 15          # |a - za| * |b - zb| <= 255 * 255, times the factor, inside int32
ROUND_SHIFT = 15          # the rounding constant 2^(shift-1) is an ALU immediate


def _operands(graph, node) -> tuple[str, str] | None:
    """(feature map, gate) of a same-shape or channel-broadcast Mul of two images, else None."""
    a, b = node.inputs[:2]
    ta, tb = graph.types[a].shape, graph.types[b].shape
    if len(ta) != 4 or len(tb) != 4:
        return None
    if ta == tb:
        return a, b
    for x, g, tx, tg in ((a, b, ta, tb), (b, a, tb, ta)):
        if tg == (tx[0], tx[1], 1, 1):
            return x, g
    return None


def problem(graph, node, ctx) -> str | None:
    if any(n in graph.constants for n in node.inputs):
        return "Mul by a constant: the ALU multiplies two tensors computed at run time (a constant folds into weights)"
    if _operands(graph, node) is None:
        shapes = " * ".join(str(list(graph.types[n].shape)) for n in node.inputs)
        return (f"Mul of {shapes}: the ALU multiplies images of one shape, or an image by one value per "
                "channel")
    cpu = [n for n in node.inputs if n not in ctx.on_accelerator]
    if cpu:
        return f"Mul of {cpu[0]}, a tensor the CPU computed: one multiply is cheaper there than a crossing"
    if ctx.vta_compat:
        return "Mul of two tensors in VTA mode: VTA has no ALU MUL or LOAD ACC_8BIT"
    return None


def quantize(q, node, act):
    x, gate = _operands(q.g, node)
    lost = q.lost_qdq_grid([x, gate], node.outputs[:1])
    if lost is not None:       # the CPU's Mul between the model's pairs is what the model says
        raise KeepOnCpu(f"Mul of a QDQ model on the CPU: {lost}")
    aq, s_a = q.packed_input(x)
    bq, s_b = q.packed_input(gate)
    y = node.outputs[0]
    xt = q.g.types[aq].shape
    channels = q.g.types[x].shape[1]
    s_y, z_y = q.out_scale(y, channels, None)
    factor = np.asarray(s_a, np.float64) * np.asarray(s_b, np.float64) / np.asarray(s_y, np.float64)
    total, m = fixed_point(factor, FACTOR_BITS, 2 * ROUND_SHIFT)
    shift = min(total, ROUND_SHIFT)
    layer = MulLayer(xt[0], xt[1], xt[2], xt[3], q.g.types[bq].shape[2:4] == (1, 1) and xt[2:4] != (1, 1),
                     za=q.zp.get(aq, 0), zb=q.zp.get(bq, 0), zy=int(z_y), pre_shift=total - shift, shift=shift)
    out = q.output(y, xt, s_y, z_y)
    factors = q.const(f"{node.name}.m", V.pack_bias(m.astype(np.int32), q.config.batch, q.config.block))
    q.emit(OP, node, [aq, bq, factors], out, {"layer": asdict(layer),
                                               "epilogue": asdict(V.Epilogue(lo=layer.lo, hi=layer.hi))})


def spec(graph, node) -> KernelSpec:
    return KernelSpec(OP.name, MulLayer(**node.attrs["layer"]), V.Epilogue(**node.attrs["epilogue"]))


OP = VdlaOp(
    semantics=semantics.SEMANTICS,
    sources=("Mul",),
    problem=problem,
    quantize=quantize,
    spec=spec,
    compile=lambda config, s, knobs, name, vta: compile_mul(config, s.layer, knobs, name=name, vta_compat=vta),
    tiling_problem=lambda config, s, vta: mul_tiling_problem(config, s.layer),
    default_choices=lambda config, s, vta: [default_mul_knobs(config, s.layer)])
