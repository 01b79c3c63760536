"""One call from a layer description to a compiled VDLA kernel: placeholders in the SPEC §7
layouts, the operator and its epilogue, the schedule (given knobs or the default), and
build_vdla. The program's buffers are, in order: x, w, [bias], [scale], [rscale], [residual], [table], y;
an epilogue on the requantizer has x, w, qparams (per channel block its bias, multiplier and
CTRL rows, vdla.hw.requantizer), y.
vta_compat=True compiles streams that VTA computes the same (vta_mode: shifts in VTA's
range; no MUL, residual or pad_min, refused with the layer named)."""
from __future__ import annotations

import json
from dataclasses import asdict

from vdla.hw.depthwise import depthwise_problem
from vdla.hw.requantizer import REGISTERS

from ... import te
from ...build import build_vdla
from .epilogue import Epilogue, apply_epilogue, instruction_epilogue
from .ops import conv2d, dense, depthwise_conv2d, depthwise_rows
from ..transform import pad
from .plan import (ConvLayer, DenseLayer, conv_knob_problem, default_conv_knobs, default_dense_knobs,
                   dense_knob_problem)
from .schedule import ConvKnobs, DenseKnobs, schedule_conv2d, schedule_dense
from .vta_mode import SHIFT_STEP, vta_epilogue, zero_padding


def kernel_meta(op, knobs, layer, ep, vta_compat=False) -> dict:
    """What was compiled, in JSON terms (tuples become lists), for `vdla info` and tuners: the
    epilogue as its instructions have it (instruction_epilogue)."""
    return json.loads(json.dumps({"op": op, "knobs": asdict(knobs), "layer": asdict(layer),
                                  "epilogue": instruction_epilogue(asdict(ep)), "vta_compat": vta_compat}))


def check_knobs(name, config, layer, knobs, problem: str | None) -> None:
    """Refuse given knobs that do not schedule the layer (`problem`: the plan's reason)."""
    if problem:
        raise ValueError(f"{name}: schedule {knobs} does not fit {layer} on {config.name}: {problem}")


def activation(config, layer, name="x"):
    """The int8 activation placeholder of a layer of n x c blocks of h x w pixels (SPEC §7)."""
    return te.placeholder((layer.n, layer.c, layer.h, layer.w, config.batch, config.block), "int8", name)


def lut_table(config):
    """The lookup table's placeholder: TABLE_ENTRIES int8 in LOAD LUT's elements (vdla.hw.alu_ops)."""
    return te.placeholder((config.lut_depth, config.batch, config.block), "int8", "table")


def _ceil(a, b):
    return -(-a // b)


def compile_conv2d(config, layer: ConvLayer, ep: Epilogue | None = None, knobs: ConvKnobs | None = None,
                   name: str = "conv2d", vta_compat: bool = False):
    """-> (KernelProgram, ConvKnobs)."""
    ep = ep or Epilogue()
    run_ep, pad_value, shift_step = ep, layer.pad_value, None
    if layer.rows:
        problem = depthwise_problem(config) or ("VTA has no DEPTHWISE (a VDLA extension)" if vta_compat else None)
        if problem:
            raise ValueError(f"{name}: {layer} runs by DEPTHWISE rows: {problem}")
    if vta_compat:
        run_ep, shift_step = vta_epilogue(ep, name), SHIFT_STEP
        pad_value = zero_padding(name, f"the input (zero point {layer.pad_value})", layer.pads, layer.pad_value)
    knobs = knobs or default_conv_knobs(config, layer, ep)
    check_knobs(name, config, layer, knobs, conv_knob_problem(config, layer, knobs, ep))
    if not any(layer.pads):
        # what pads the tiles past the image's edge feeds outputs that are never stored: any
        # value does, and zeros are one the DMA writes (an input's zero point may not be)
        pad_value = 0
    B, L = config.batch, config.block
    x = activation(config, layer)
    if layer.rows:
        w = te.placeholder((layer.c, layer.row_tiles, L, L), "int8", "w")
    elif layer.depthwise:
        w = te.placeholder((layer.c, layer.kh, layer.kw, L, L), "int8", "w")
    else:
        w = te.placeholder((layer.o, layer.c, layer.kh, layer.kw, L, L), "int8", "w")
    oh, ow = layer.out_h, layer.out_w
    h_mult = knobs.tile_h * (knobs.vthreads if knobs.vthreads > 1 and knobs.vthread_axis == "h" else 1)
    out_hw = (_ceil(oh, h_mult) * h_mult, _ceil(ow, knobs.tile_w) * knobs.tile_w)
    strides = (layer.stride, layer.stride)
    if layer.rows:
        acc = depthwise_rows(x, w, strides, layer.pads, out_hw, name="conv", pad_value=pad_value, kh=layer.kh)
    else:
        op = depthwise_conv2d if layer.depthwise else conv2d
        acc = op(x, w, strides, layer.pads, out_hw, name="conv", pad_value=pad_value)
    bias = _per_channel(ep, layer.o, B, L)
    scale = te.placeholder((layer.o, B, L), "int32", "scale") if ep.scale else None
    rscale = te.placeholder((layer.o, B, L), "int32", "rscale") if ep.residual_scale else None
    out_shape = (layer.n, layer.o, oh, ow, B, L)
    res = te.placeholder(out_shape, "int8", "residual") if ep.residual else None
    table = lut_table(config) if ep.table else None
    stages, res32, out = apply_epilogue(acc, run_ep, out_shape, bias, res, name="y", scale=scale,
                                        shift_step=shift_step, rscale=rscale, table=table)
    x_src = acc.op.input_tensors[0]
    s = schedule_conv2d(config, out, acc, stages, res32, x_src, w, bias, knobs, depthwise=layer.depthwise,
                        scale=scale, rscale=rscale, table=table, rows=layer.rows, stride=layer.stride)
    args = [x, w] + [t for t in (bias, scale, rscale, res, table) if t is not None] + [out]
    prog = build_vdla(s, args, config, name)
    prog.meta.update(kernel_meta("depthwise_conv2d" if layer.depthwise else "conv2d", knobs, layer, ep, vta_compat))
    return prog, knobs


def _per_channel(ep: Epilogue, blocks: int, B: int, L: int):
    """The bias placeholder, or with the requantizer its qparams (blocks, 3, B, L)."""
    if ep.requantizer:
        return te.placeholder((blocks, len(REGISTERS), B, L), "int32", "qparams")
    return te.placeholder((blocks, B, L), "int32", "bias") if ep.bias else None


def compile_dense(config, layer: DenseLayer, ep: Epilogue | None = None, knobs: DenseKnobs | None = None,
                  name: str = "dense", vta_compat: bool = False, groups: int = 0):
    """groups > 0: that many products, x, w and y each holding one per group after the other
    (the per-channel operands shared)."""
    ep = ep or Epilogue()
    run_ep, shift_step = (vta_epilogue(ep, name), SHIFT_STEP) if vta_compat else (ep, None)
    knobs = knobs or default_dense_knobs(config, layer, ep)
    check_knobs(name, config, layer, knobs, dense_knob_problem(config, layer, knobs, ep))
    B, L = config.batch, config.block
    g = (groups,) if groups else ()
    x = te.placeholder((*g, layer.m, layer.k, B, L), "int8", "x")
    w = te.placeholder((*g, layer.n, layer.k, L, L), "int8", "w")
    rows = _ceil(layer.m, knobs.tile_m) * knobs.tile_m        # the last row tile may overhang the matrix
    ndim = len(x.shape)
    xp = pad(x, [0] * ndim, [0] * len(g) + [rows - layer.m, 0, 0, 0], 0, name="x.pad") if rows > layer.m else x
    acc = dense(xp, w, name="dense")
    bias = _per_channel(ep, layer.n, B, L)
    scale = te.placeholder((layer.n, B, L), "int32", "scale") if ep.scale else None
    rscale = te.placeholder((layer.n, B, L), "int32", "rscale") if ep.residual_scale else None
    out_shape = (*g, layer.m, layer.n, B, L)
    res = te.placeholder(out_shape, "int8", "residual") if ep.residual else None
    table = lut_table(config) if ep.table else None
    stages, res32, out = apply_epilogue(acc, run_ep, out_shape, bias, res, name="y", scale=scale,
                                        shift_step=shift_step, rscale=rscale, table=table, channel_axis=len(g) + 1)
    s = schedule_dense(config, out, acc, stages, res32, xp, w, bias, knobs, scale=scale, rscale=rscale,
                       table=table)
    args = [x, w] + [t for t in (bias, scale, rscale, res, table) if t is not None] + [out]
    prog = build_vdla(s, args, config, name)
    prog.meta.update(kernel_meta("dense", knobs, layer, ep, vta_compat))
    return prog, knobs
