"""Elementwise int8 multiplication on the VDLA ALU: a gate times a feature map (a squeeze-
excitation block's channel gate, broadcast over the pixels, or a gated unit's same-shape one),
requantized by a factor per channel:

    y = clip((((a - za) * (b - zb) * m[c]) >> pre_shift) + 2^(shift-1) >> shift) + zy, lo, hi)

Both operands are loaded into the accumulator SRAM with LOAD ACC_8BIT (a broadcast gate: one
vector per channel block and tile), their zero points subtracted by ALU ADDs, multiplied by an
ALU MUL of two tensors, then by the factors (int32 operands shaped like a bias) and shifted:
|a - za|, |b - zb| <= 255 and factors below 2^15 keep the product inside int32. VTA has neither
LOAD ACC_8BIT nor ALU MUL, so the op is refused in VTA mode (the Mul stays on the CPU)."""
from __future__ import annotations

from dataclasses import dataclass

from ... import te
from ...build import build_vdla
from ...codegen.vdla.errors import VtaCompatError
from ...tir import expr as E
from .build import kernel_meta
from .epilogue import Epilogue
from .plan import NoTilingError
from .pool import PoolKnobs
from .schedule import schedule_tile_chain


@dataclass(frozen=True)
class MulLayer:
    n: int
    c: int                # channel blocks
    h: int
    w: int
    broadcast: bool       # b is one value per channel (H = W = 1), broadcast over the pixels
    za: int = 0
    zb: int = 0
    zy: int = 0
    pre_shift: int = 0
    shift: int = 0
    lo: int = -128
    hi: int = 127


def default_mul_knobs(config, layer: MulLayer) -> PoolKnobs:
    """Whole rows of pixels per tile (a divisor of the height: the operands are read as they are,
    never past their end); per thread the tile of a (in place: every stage), of b (a row of its
    own, or one vector per channel block when broadcast) and the factors must fit the
    accumulators."""
    for vt in (2, 1):
        if layer.c % vt:
            continue
        for tc in sorted((d for d in range(1, layer.c // vt + 1) if (layer.c // vt) % d == 0), reverse=True):
            room = config.acc_depth // (vt * tc) - 1 - (1 if layer.broadcast else 0)    # factors, gate
            rows = room // (layer.w * (1 if layer.broadcast else 2))
            th = max((d for d in range(1, min(rows, layer.h) + 1) if layer.h % d == 0), default=0)
            if th >= 1:
                return PoolKnobs(tc, th, layer.w, vt)
    raise NoTilingError(layer, config, f"one row of {layer.w} pixels of both operands does not fit the "
                                       f"{config.acc_depth}-element accumulator SRAM")


def mul_tiling_problem(config, layer: MulLayer) -> str | None:
    try:
        default_mul_knobs(config, layer)
    except NoTilingError as exc:
        return exc.reason
    return None


def _alu(shape, f, name, op, imm=None):
    return te.compute(shape, f, name=name, attrs={"vdla.alu": (op, imm)})


def _imm(shape, t, name, op, value):
    """One ALU stage of t with an immediate: add, shr (floor), max or min."""
    k = E.Const(value, "int32")
    f = {"add": lambda *i: t(*i) + k, "shr": lambda *i: t(*i) // (1 << value),
         "max": lambda *i: te.maximum(t(*i), k), "min": lambda *i: te.minimum(t(*i), k)}[op]
    return _alu(shape, f, name, op, value)


def compile_mul(config, layer: MulLayer, knobs: PoolKnobs | None = None, name: str = "mul",
                vta_compat: bool = False):
    """-> (KernelProgram, knobs); buffers a, b, m, y."""
    if vta_compat:
        raise VtaCompatError(f"{name}: VTA has neither LOAD ACC_8BIT nor ALU MUL to multiply two tensors")
    Epilogue(shift=layer.shift, round=True, lo=layer.lo, hi=layer.hi, pre_shift=layer.pre_shift)   # the checks
    knobs = knobs or default_mul_knobs(config, layer)
    B, L = config.batch, config.block
    shape = (layer.n, layer.c, layer.h, layer.w, B, L)
    gate_shape = (layer.n, layer.c, 1, 1, B, L) if layer.broadcast else shape
    a = te.placeholder(shape, "int8", "a")
    b = te.placeholder(gate_shape, "int8", "b")
    m = te.placeholder((layer.c, B, L), "int32", "m")
    a32 = te.compute(shape, lambda *i: te.cast("int32", a(*i)), name="mul.a")
    b32 = te.compute(gate_shape, lambda *i: te.cast("int32", b(*i)), name="mul.b")
    m32 = te.compute((layer.c, B, L), lambda *i: m(*i), name="mul.m_vec")
    stages, at, bt = [], a32, b32
    if layer.za:
        at = _imm(shape, at, "mul.za", "add", -layer.za)
        stages.append(at)
    if layer.zb:
        bt = _imm(gate_shape, bt, "mul.zb", "add", -layer.zb)
        stages.append(bt)
    x, g = at, bt
    if layer.broadcast:
        t = _alu(shape, lambda n, c, h, w, b, l: x[n, c, h, w, b, l] * g[n, c, 0, 0, b, l], "mul.ab", "mul")
    else:
        t = _alu(shape, lambda *i: x(*i) * g(*i), "mul.ab", "mul")
    p = t
    t = _alu(shape, lambda n, c, h, w, b, l: p[n, c, h, w, b, l] * m32[c, b, l], "mul.m", "mul")
    stages += [p, t]
    if layer.pre_shift:
        t = _imm(shape, t, "mul.preshr", "shr", layer.pre_shift)
        stages.append(t)
    if layer.shift:
        t = _imm(shape, t, "mul.round", "add", 1 << (layer.shift - 1))
        stages.append(t)
        t = _imm(shape, t, "mul.shr", "shr", layer.shift)
        stages.append(t)
    if layer.zy:
        t = _imm(shape, t, "mul.zy", "add", layer.zy)
        stages.append(t)
    t = _imm(shape, t, "mul.max", "max", layer.lo)
    t2 = _imm(shape, t, "mul.min", "min", layer.hi)
    stages += [t, t2]
    out = te.compute(shape, lambda *i: te.cast("int8", t2(*i)), name="y")
    s = schedule_tile_chain(config, out, [a32, b32, m32], stages, knobs)
    prog = build_vdla(s, [a, b, m, out], config, name)
    prog.meta.update(kernel_meta("mul", knobs, layer, Epilogue(lo=layer.lo, hi=layer.hi), vta_compat))
    return prog, knobs
