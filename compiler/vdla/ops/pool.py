"""VdlaPool: ONNX MaxPool, AveragePool and GlobalAveragePool on the tensor ALU (a chain of MAX
or ADD stages over the window; the average as a fixed-point multiply and shift of the sum,
into its own calibrated grid where it has one and the zero points (the window's, its own) fit
an immediate added to the sum, else keeping the input's scale and zero point: padding reads the
code of a real zero).

VTA mode: VTA's DMA pads with zeros only, so a padded max pooling is offloaded only when its
input is non-negative (zero padding never wins there), and the window goes through the GEMM
core with the weight block mul * I, which carries the averaging factor (VTA has no ALU MUL)."""
from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from vdla.driver.host_ops.vdla import pool as semantics
from vdla.hw.alu_ops import IMM_MAX, immediate_error
from vdla.hw.isa import AluOp

from ...codegen.vdla import VtaCompatError
from ...topi import vdla as V
from ...topi.vdla.pool import window_factor
from ..op import KernelSpec, VdlaOp
from ..requant import channel_scale, padded

# a rounded shift adds 2^(shift-1) as an ALU immediate
ROUND_SHIFT_MAX = IMM_MAX.bit_length()


def problem(graph, node, ctx) -> str | None:
    if len(graph.types[node.inputs[0]].shape) != 4:
        return f"{node.op} of a non-image tensor: the accelerator pools 2-d windows of images"
    if node.op == "GlobalAveragePool":
        return None
    a = node.attrs
    if any(d != 1 for d in a.get("dilations") or [1, 1]) or a.get("ceil_mode", 0) \
            or len(node.outputs) > 1 and node.outputs[1]:
        return f"{node.op} with dilation, ceil_mode or indices"
    if (a.get("strides") or [1, 1])[0] != (a.get("strides") or [1, 1])[1]:
        return f"{node.op} with two different strides"
    if node.op == "AveragePool" and any(a.get("pads") or [0]) and not a.get("count_include_pad", 0):
        return ("AveragePool with padding that divides border windows by their valid elements "
                "(count_include_pad=0): the ALU averages with one divisor per layer")
    if ctx.vta_compat and any(a.get("pads") or [0]) and node.inputs[0] not in ctx.nonneg:
        return "MaxPool with padding of a tensor that may be negative: VTA's DMA pads with zeros only"
    return None


def quantize(q, node, act):
    xq, s_x = q.packed_input(node.inputs[0])
    xt = q.g.types[xq]
    # max and mean commute with the code shift: the output keeps the input's zero point (a mean
    # in its own grid, that grid's)
    zero = q.zp.get(xq, 0)
    if node.op == "MaxPool":
        a = node.attrs
        pads = tuple(a.get("pads") or (0, 0, 0, 0))
        # VTA mode offloads a padded max pooling only of a non-negative input (placement):
        # zero padding never wins there either
        layer = V.PoolLayer(xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3], *a["kernel_shape"],
                            (a.get("strides") or [1, 1])[0], pads, "max", 0 if q.vta_compat and any(pads) else None)
        ep = V.Epilogue(lo=None, hi=None)           # the max of int8 values is an int8 value
    else:
        if node.op == "AveragePool":
            a = node.attrs
            pads = tuple(a.get("pads") or (0, 0, 0, 0))
            # count_include_pad: padding counts as real zeros, the code of the input's zero point
            layer = V.PoolLayer(xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3], *a["kernel_shape"],
                                (a.get("strides") or [1, 1])[0], pads, "sum", q.zp.get(xq, 0) if any(pads) else None)
        else:
            layer = V.PoolLayer(xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3], xt.shape[2], xt.shape[3],
                                1, (0, 0, 0, 0), "sum")
        hw = layer.kh * layer.kw
        # sum * round(2^shift / (H*W)) >> shift, same scale, with the factor inside the ALU's
        # 16-bit immediate (a 1x1 window: 2^14 >> 14, not 2^15); VTA mode keeps it int8
        largest = 127 if q.vta_compat else IMM_MAX
        shift = min(ROUND_SHIFT_MAX, int(math.floor(math.log2(largest * hw))))
        ep = V.Epilogue(mul=max(1, int(round((1 << shift) / hw))), shift=shift, round=True)
        finer = None if q.vta_compat else _finer_mean(q, node, xq, s_x, hw)
        if finer is not None:
            ep, s_x, zero = finer
    inputs = [xq]
    try:       # the window's weight block for the GEMM core (VTA mode: times the averaging factor)
        factor = window_factor(layer, ep, node.name) if q.vta_compat else 1
        inputs.append(q.const(f"{node.name}.window", V.scaled_identity(q.config.block, factor), True))
    except VtaCompatError:
        pass   # no int8 factor: the kernel does not compile, and the node goes to the CPU
    out = q.output(node.outputs[0], (layer.n, layer.c, layer.out_h, layer.out_w, q.config.batch, q.config.block),
                   s_x, zero)
    layer_doc = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(layer).items()}
    q.emit(OP, node, inputs, out, {"layer": layer_doc, "epilogue": asdict(ep)})


def _finer_mean(q, node, xq, s_x, hw: int):
    """(epilogue, output scale, output zero point) of an average in its own calibrated grid, or
    None to keep the input's. A mean is far smaller than its window's largest values
    (EfficientNet's squeeze-excitation averages 112x112 SiLU outputs): in the input's steps it
    kept a few codes, 15.8 dB where its input had 23; SqueezeNet's classifier averages 13x13
    ReLU outputs into its logits, whose [0, hi] spreads over all 256 codes (zero point -128).
    y = (sum - hw zp_x) * s_x / (hw s_y) + zp_y as sum + offset, one multiply and a rounded
    shift, with the zero points in the offset (zp_y in steps of the sum: within half a step of
    the factor, far below one output code); needs one input scale (the factor is an immediate)."""
    y = node.outputs[0]
    channels = q.g.types[y].shape[1]
    s_x = np.asarray(s_x, np.float64)[:channels]         # (not the padding channels' scales)
    if y not in q.stats or not np.allclose(s_x, s_x[0]):
        return None
    skewed = q.asymmetric(y)
    s_y, zp_y = (skewed[0], skewed[1]) if skewed is not None else \
        (float(channel_scale(q.stats, y, channels).max()), 0)
    factor = float(s_x[0]) / (hw * s_y)
    if factor * hw <= 1.0:           # the output's steps are the input's or coarser: nothing to gain
        return None
    offset = int(round(-hw * q.zp.get(xq, 0) + zp_y / factor))
    # mul <= IMM_MAX, the rounding 2^(shift-1) an immediate too, |sum + offset| * mul in an accumulator
    acc_max, code_max = (1 << (q.config.acc_bits - 1)) - 1, 1 << (q.config.inp_bits - 1)
    shift = min(ROUND_SHIFT_MAX, int(math.floor(math.log2(IMM_MAX / factor))),
                int(math.floor(math.log2(acc_max / ((code_max * hw + abs(offset)) * factor)))))
    if shift < 1 or immediate_error(AluOp.ADD, offset):
        return None
    ep = V.Epilogue(offset=offset, mul=max(1, int(round(factor * (1 << shift)))), shift=shift, round=True)
    return ep, padded(np.full(channels, s_y), q.config.block), zp_y


def spec(graph, node) -> KernelSpec:
    a = node.attrs
    layer = V.PoolLayer(**dict(a["layer"], pads=tuple(a["layer"]["pads"])))
    return KernelSpec(OP.name, layer, V.Epilogue(**a["epilogue"]))


OP = VdlaOp(
    semantics=semantics.SEMANTICS,
    sources=("MaxPool", "AveragePool", "GlobalAveragePool"),
    problem=problem,
    keeps_sign=True,
    scales_output=False,
    quantize=quantize,
    spec=spec,
    compile=lambda config, s, knobs, name, vta: V.compile_pool2d(config, s.layer, s.ep, knobs, name=name,
                                                                   vta_compat=vta),
    tiling_problem=lambda config, s, vta: V.pool_tiling_problem(config, s.layer, vta),
    default_choices=lambda config, s, vta: [V.default_pool_knobs(config, s.layer, vta)])
