"""Elementwise int8 addition on the VDLA ALU, for residual connections between quantized
tensors of different scales: y = clip((a * ma + b * mb + 2^(shift-1)) >> shift, lo, hi).

Both operands are loaded into the accumulator SRAM with LOAD ACC_8BIT (sign-extended), each
multiplied by its fixed-point factor in place, added, and requantized by the epilogue. The
factors are immediates, or (per_channel) one per channel: two int32 operands shaped like a
bias (C/L, B, L), for tensors quantized with a scale per channel.

VTA mode (vta_compat=True, see vta_mode): VTA has neither LOAD ACC_8BIT nor ALU MUL, so each
operand goes through INP and a GEMM whose weight block carries its factor: ma * I (or one
diagonal block per channel block, vta_mode.diagonal_weight, when per_channel); the factors
must fit int8. Buffers a, b, wa, wb, [offset], y."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from vdla.hw.alu_ops import immediate_error
from vdla.hw.isa import AluOp

from ... import te
from ...build import build_vdla
from .epilogue import Epilogue, apply_epilogue
from .plan import NoTilingError
from .pool import PoolKnobs
from .schedule import schedule_tile_chain
from .vta_mode import SHIFT_STEP, check_int8_factor, gemm_into_acc, vta_epilogue


@dataclass(frozen=True)
class AddLayer:
    n: int
    c: int        # channel blocks
    h: int
    w: int
    ma: int = 0   # fixed-point factors (16-bit immediates) ...
    mb: int = 0
    per_channel: bool = False      # ... or per-channel operands (buffers ma, mb after a, b)
    offset: bool = False           # per_channel: + a per-channel int32 constant (zero points' terms)


def default_add_knobs(config, layer: AddLayer, vta_compat: bool = False) -> PoolKnobs:
    """Whole rows of pixels per tile (a divisor of the height: the operands are read as they
    are, never past their end); both operands' tiles, per thread, must fit the accumulators
    (and in VTA mode the input SRAM, which they pass through)."""
    if vta_compat:
        per_pixel_row = 2 * layer.w + (1 if layer.offset else 0)
        depth = min(config.acc_depth, config.inp_depth)
    else:
        per_pixel_row = 2 * layer.w + (3 if layer.per_channel else 0)   # both operands (+ their factors)
        depth = config.acc_depth
    for vt in (2, 1):
        if layer.c % vt:
            continue
        for tc in sorted((d for d in range(1, layer.c // vt + 1) if (layer.c // vt) % d == 0), reverse=True):
            rows = depth // (vt * tc * per_pixel_row)
            th = max((d for d in range(1, min(rows, layer.h) + 1) if layer.h % d == 0), default=0)
            if th >= 1:
                return PoolKnobs(tc, th, layer.w, vt)
    raise NoTilingError(layer, config, f"one row of {layer.w} pixels of both operands does not fit the "
                                       f"{depth}-element {'accumulator' if depth == config.acc_depth else 'input'} SRAM")


def compile_add(config, layer: AddLayer, ep: Epilogue, knobs: PoolKnobs | None = None, name: str = "add",
                vta_compat: bool = False):
    """-> (KernelProgram, knobs); buffers a, b, [ma, mb, [offset]], y (VTA mode: a, b, wa,
    wb, [offset], y)."""
    for k in ("ma", "mb"):
        if not layer.per_channel and (problem := immediate_error(AluOp.MUL, getattr(layer, k))):
            raise ValueError(f"{name}: {k}={getattr(layer, k)}: {problem}")
    knobs = knobs or default_add_knobs(config, layer, vta_compat)
    if vta_compat:
        return _compile_add_vta(config, layer, ep, knobs, name)
    B, L = config.batch, config.block
    shape = (layer.n, layer.c, layer.h, layer.w, B, L)
    a = te.placeholder(shape, "int8", "a")
    b = te.placeholder(shape, "int8", "b")
    a32 = te.compute(shape, lambda *i: te.cast("int32", a(*i)), name="add.a")
    b32 = te.compute(shape, lambda *i: te.cast("int32", b(*i)), name="add.b")
    loads, factors = [a32, b32], []
    if layer.per_channel:
        ma = te.placeholder((layer.c, B, L), "int32", "ma")
        mb = te.placeholder((layer.c, B, L), "int32", "mb")
        ma32 = te.compute((layer.c, B, L), lambda *i: ma(*i), name="add.ma_vec")
        mb32 = te.compute((layer.c, B, L), lambda *i: mb(*i), name="add.mb_vec")
        loads += [ma32, mb32]
        factors = [ma, mb]
        if layer.offset:
            off = te.placeholder((layer.c, B, L), "int32", "offset")
            off32 = te.compute((layer.c, B, L), lambda *i: off(*i), name="add.offset_vec")
            loads.append(off32)
            factors.append(off)
        tensor = {"vdla.alu": ("mul", None)}
        am = te.compute(shape, lambda n, c, h, w, b, l: a32[n, c, h, w, b, l] * ma32[c, b, l], name="add.ma",
                        attrs=tensor)
        bm = te.compute(shape, lambda n, c, h, w, b, l: b32[n, c, h, w, b, l] * mb32[c, b, l], name="add.mb",
                        attrs=tensor)
    else:
        am = te.compute(shape, lambda *i: a32(*i) * te.const(layer.ma, "int32"), name="add.ma",
                        attrs={"vdla.alu": ("mul", layer.ma)})
        bm = te.compute(shape, lambda *i: b32(*i) * te.const(layer.mb, "int32"), name="add.mb",
                        attrs={"vdla.alu": ("mul", layer.mb)})
    total = te.compute(shape, lambda *i: am(*i) + bm(*i), name="add.sum", attrs={"vdla.alu": ("add", None)})
    alu = [am, bm, total]
    if layer.per_channel and layer.offset:
        summed = total
        total = te.compute(shape, lambda n, c, h, w, b, l: summed[n, c, h, w, b, l] + off32[c, b, l],
                           name="add.offset", attrs={"vdla.alu": ("add", None)})
        alu.append(total)
    stages, _, out = apply_epilogue(total, ep, shape, name="y")
    s = schedule_tile_chain(config, out, loads, [*alu, *stages], knobs)
    prog = build_vdla(s, [a, b, *factors, out], config, name)
    prog.meta.update(json.loads(json.dumps({"op": "add", "knobs": asdict(knobs), "layer": asdict(layer),
                                            "epilogue": asdict(ep)})))
    return prog, knobs


def _compile_add_vta(config, layer: AddLayer, ep: Epilogue, knobs: PoolKnobs, name: str):
    if not layer.per_channel:
        for k in ("ma", "mb"):
            check_int8_factor(name, k, getattr(layer, k))
    run_ep = vta_epilogue(ep, name)
    B, L = config.batch, config.block
    shape = (layer.n, layer.c, layer.h, layer.w, B, L)
    a = te.placeholder(shape, "int8", "a")
    b = te.placeholder(shape, "int8", "b")
    w_shape = (layer.c, L, L) if layer.per_channel else (L, L)
    wa = te.placeholder(w_shape, "int8", "wa")
    wb = te.placeholder(w_shape, "int8", "wb")
    am = gemm_into_acc(a, wa, shape, "add.ma", layer.per_channel)
    bm = gemm_into_acc(b, wb, shape, "add.mb", layer.per_channel)
    total = te.compute(shape, lambda *i: am(*i) + bm(*i), name="add.sum", attrs={"vdla.alu": ("add", None)})
    alu, loads, args = [total], [], [a, b, wa, wb]
    if layer.per_channel and layer.offset:
        off = te.placeholder((layer.c, B, L), "int32", "offset")
        off32 = te.compute((layer.c, B, L), lambda *i: off(*i), name="add.offset_vec")
        summed = total
        total = te.compute(shape, lambda n, c, h, w, b, l: summed[n, c, h, w, b, l] + off32[c, b, l],
                           name="add.offset", attrs={"vdla.alu": ("add", None)})
        alu.append(total)
        loads.append(off32)
        args.append(off)
    stages, _, out = apply_epilogue(total, run_ep, shape, name="y", shift_step=SHIFT_STEP)
    s = schedule_tile_chain(config, out, loads, [*alu, *stages], knobs, gemm_stages=[am, bm])
    prog = build_vdla(s, args + [out], config, name)
    prog.meta.update(json.loads(json.dumps({"op": "add", "knobs": asdict(knobs), "layer": asdict(layer),
                                            "epilogue": asdict(ep), "vta_compat": True})))
    return prog, knobs
