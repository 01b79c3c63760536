"""ALU epilogues of a GEMM-shaped operator: bias add, requantization (multiply, rounding
add, arithmetic shift right), residual add, clip/ReLU, then the int8 output the STORE
writes; or (`requantizer`) one pass whose OUT writes the write-back requantizer makes (ALU
FLUSH, which also adds a scaled residual and leaves the accumulators zero). Each step is one
elementwise stage on the accumulators, marked with the ALU operation that computes
it (attrs "vdla.alu" = (op, immediate or None)).

Order: acc + bias -> + offset -> >> pre_shift -> * scale[channel] -> * mul -> [+ residual * rscale[channel]]
-> + 2^(shift-1) (round) -> >> shift -> [+ residual] -> max(lo) -> min(hi) -> [table] -> int8.
The STORE truncates, so the clip bounds must lie in int8. `table` ends with the ALU's lookup
(ALU LUT): the value saturated to int8 picks an entry of the layer's table, an int8 -> int8
map such as an activation between two quantizations; it saturates by itself, so it takes the
place of the clip. `scale` is a per-output-channel multiplier (a
tensor operand shaped like the bias): with per-channel weight scales, each channel requantizes
by its own fixed-point factor; `pre_shift` keeps the product inside 32 bits. A residual on the
output's own grid is added after the shift; one on another grid (`residual_scale`) is
multiplied by its per-channel factor `rscale` and added before the shift, so that the sum is
rounded once. `offset` is an immediate added before the multiplications: a pooled sum's
input zero points (the sum of a window's codes minus the window's count times their zero point)."""
from __future__ import annotations

from dataclasses import dataclass

from vdla.hw.alu_ops import SHR_MAX, immediate_error
from vdla.hw.isa import AluOp
from vdla.hw.requantizer import BIAS, CTRL, MUL

from ... import te
from ...intrin.vdla import MAX_SHIFT, REQUANT_SHIFT_MAX, lookup, requantize
from ...tir import expr as E
from ..transform import pad


@dataclass(frozen=True)
class Epilogue:
    bias: bool = False          # + bias (O/L, B, L) int32, broadcast over pixels
    offset: int = 0             # + immediate (a pooled sum's zero points), before the multiplications
    pre_shift: int = 0          # arithmetic shift right before the multiplications
    scale: bool = False         # * scale (O/L, B, L) int32, per output channel
    mul: int | None = None      # * immediate (16-bit signed)
    shift: int = 0              # arithmetic shift right (floor division by 2^shift)
    round: bool = False         # add 2^(shift-1) first: round half up
    residual: bool = False      # + int8 tensor of the output's layout (sign-extended on load)
    residual_scale: bool = False  # the residual * rscale (O/L, B, L) int32, added before the shift
    lo: int | None = -128       # clip below (0: ReLU)
    hi: int | None = 127        # clip above
    table: bool = False         # then the lookup table (lut_depth, B, L) int8 (ALU LUT)
    # OUT's write-back requantizer instead of the chain (vdla.hw.requantizer): per channel a
    # bias and a multiplier (the kernel's `qparams` (O/L, 3, B, L): bias, multiplier, CTRL),
    # then >> shift with rounding, + zero, the clip lo..hi, and with `table` the table's entry
    # (CTRL's table bit). Before it only `mul` (a power of two that makes room for a residual's
    # fraction) and a scaled residual may come
    requantizer: bool = False
    zero: int = 0               # (requantizer) the output's zero point, added after the shift

    def __post_init__(self):
        if self.requantizer:
            others = [k for k in ("bias", "offset", "pre_shift", "scale", "round") if getattr(self, k)]
            if others or (self.residual and not self.residual_scale):
                raise ValueError(f"an epilogue on the requantizer has no separate "
                                 f"{', '.join(others) or 'unscaled residual'}")
            if self.mul is not None and (problem := immediate_error(AluOp.MUL, self.mul)):
                raise ValueError(f"epilogue mul: {problem}")
            if not 0 <= self.shift <= REQUANT_SHIFT_MAX:
                raise ValueError(f"requantizer shift {self.shift} outside 0..{REQUANT_SHIFT_MAX}")
            for name in ("zero", "lo", "hi"):
                v = getattr(self, name)
                if v is None or not -128 <= v <= 127:
                    raise ValueError(f"requantizer {name}={v} is not an int8 value")
            return
        for name in ("shift", "pre_shift"):
            if not 0 <= getattr(self, name) <= SHR_MAX:
                raise ValueError(f"epilogue {name} {getattr(self, name)} outside 0..{SHR_MAX} (the ALU's right shifts)")
        for name, op in (("mul", AluOp.MUL), ("lo", AluOp.MAX), ("hi", AluOp.MIN)):
            v = getattr(self, name)
            if v is not None and (problem := immediate_error(op, v)):
                raise ValueError(f"epilogue {name}: {problem}")
        if self.offset and (problem := immediate_error(AluOp.ADD, self.offset)):
            raise ValueError(f"epilogue offset: {problem}")
        if self.round and self.shift and (problem := immediate_error(AluOp.ADD, 1 << (self.shift - 1))):
            raise ValueError(f"epilogue rounding constant 2^{self.shift - 1}: {problem}")
        if self.residual_scale and not self.residual:
            raise ValueError("epilogue residual_scale without a residual to scale")
        for name in ("lo", "hi"):
            v = getattr(self, name)
            if v is not None and not -128 <= v <= 127:
                raise ValueError(f"epilogue clip {name}={v} is outside int8: the STORE keeps the low 8 bits")


# On the requantizer the shift, the zero point and the clip are CTRL's fields in the kernel's
# qparams (pack_qparams): data, not instructions, so epilogues that differ only in them compile
# to one instruction stream (vdla.lower shares its program)
REQUANTIZER_DATA = ("shift", "zero", "lo", "hi")


def instruction_epilogue(ep: dict) -> dict:
    """An epilogue (as a dict: a node's attribute) less what reaches the kernel as data."""
    return {k: v for k, v in ep.items() if not (ep.get("requantizer") and k in REQUANTIZER_DATA)}


def alu_passes(ep: Epilogue) -> list[tuple[str, bool]]:
    """(ALU operation, reads a tensor operand) of each pass apply_epilogue makes over the
    accumulators, in order (the requantizer's pass is "flush"): what a tile's epilogue costs
    the compute module per output vector, for the schedule's cost model."""
    passes = [("add", True)] if ep.bias else []
    passes += [("add", False)] if ep.offset else []
    passes += [("shr", False)] * len(_shift_steps(ep.pre_shift, None))
    passes += [("mul", True)] if ep.scale else []
    passes += [("mul", False)] if ep.mul is not None else []
    passes += [("mul", True)] if ep.residual_scale else []
    if ep.requantizer:
        return passes + [("flush", ep.residual_scale)]
    passes += [("add", True)] if ep.residual_scale else []
    if ep.shift:
        passes += [("add", False)] if ep.round else []
        passes += [("shr", False)] * len(_shift_steps(ep.shift, None))
    passes += [("add", True)] if ep.residual and not ep.residual_scale else []
    passes += [(op, False) for op, v in (("max", ep.lo), ("min", ep.hi)) if v is not None]
    return passes + ([("lut", True)] if ep.table else [])


def _alu(shape, f, name, op, imm):
    return te.compute(shape, f, name=name, attrs={"vdla.alu": (op, imm)})


def apply_epilogue(acc, ep: Epilogue, out_shape, bias=None, residual=None, name="out", scale=None,
                   shift_step: int | None = None, rscale=None, table=None, channel_axis: int = 1):
    """-> (ALU stages in order, residual load stage or None, int8 output of out_shape).
    shift_step: the largest shift one SHR may take (VTA's ALU honours 15; the declarations
    state at most MAX_SHIFT); longer shifts become several SHRs, which floor exactly like one.
    With ep.requantizer, `bias` is the (O/L, 3, B, L) qparams and the last stage is the pass
    through the requantizer (its name ends with ".requant"). channel_axis: the output's axis of
    channel blocks, which index the per-channel operands (2 behind a batched dense's groups)."""
    stages = []
    t = acc
    ch = channel_axis
    shape = acc.shape
    ndim = len(shape)
    if ep.bias:
        b = bias

        def add_bias(*i, t=t, b=b):
            return t(*i) + b[i[ch], i[-2], i[-1]]
        t = _alu(shape, add_bias, f"{name}.bias", "add", None)
        stages.append(t)
    if ep.offset:
        t = _alu(shape, lambda *i, t=t: t(*i) + E.Const(ep.offset, "int32"), f"{name}.offset", "add", ep.offset)
        stages.append(t)
    for k, step in enumerate(_shift_steps(ep.pre_shift, shift_step)):
        t = _shr(shape, t, step, f"{name}.preshr" + (f".{k}" if k else ""))
        stages.append(t)
    if ep.scale:
        def mul_scale(*i, t=t, m=scale):
            return t(*i) * m[i[ch], i[-2], i[-1]]
        t = _alu(shape, mul_scale, f"{name}.scale", "mul", None)
        stages.append(t)
    if ep.mul is not None:
        t = _alu(shape, lambda *i, t=t: t(*i) * E.Const(ep.mul, "int32"), f"{name}.mul", "mul", ep.mul)
        stages.append(t)
    res32 = None
    if ep.residual:
        res = residual
        if tuple(res.shape) != tuple(shape):
            res = pad(res, [0] * ndim, [a - b for a, b in zip(shape, res.shape)], 0, name=f"{name}.res.pad")
        res32 = te.compute(shape, lambda *i, res=res: te.cast("int32", res(*i)), name=f"{name}.res")
    if ep.residual_scale:
        def mul_rscale(*i, m=rscale):
            return res32(*i) * m[i[ch], i[-2], i[-1]]
        scaled = _alu(shape, mul_rscale, f"{name}.rscale", "mul", None)
        stages.append(scaled)
        if ep.requantizer:          # the requantizer's pass adds it (ALU FLUSH with a tensor operand)
            return _through_requantizer(stages, res32, t, ep, out_shape, bias, name, ch, addend=scaled, table=table)
        t = _alu(shape, lambda *i, t=t: t(*i) + scaled(*i), f"{name}.residual", "add", None)
        stages.append(t)
    if ep.requantizer:              # (no bias, pre-shift or scale step before: Epilogue checks)
        return _through_requantizer(stages, res32, t, ep, out_shape, bias, name, ch, table=table)
    if ep.shift:
        if ep.round:
            r = 1 << (ep.shift - 1)
            t = _alu(shape, lambda *i, t=t: t(*i) + E.Const(r, "int32"), f"{name}.round", "add", r)
            stages.append(t)
        for k, step in enumerate(_shift_steps(ep.shift, shift_step)):
            t = _shr(shape, t, step, f"{name}.shr" + (f".{k}" if k else ""))
            stages.append(t)
    if ep.residual and not ep.residual_scale:
        t = _alu(shape, lambda *i, t=t: t(*i) + res32(*i), f"{name}.residual", "add", None)
        stages.append(t)
    if ep.lo is not None:
        t = _alu(shape, lambda *i, t=t: te.maximum(t(*i), E.Const(ep.lo, "int32")), f"{name}.max", "max", ep.lo)
        stages.append(t)
    if ep.hi is not None:
        t = _alu(shape, lambda *i, t=t: te.minimum(t(*i), E.Const(ep.hi, "int32")), f"{name}.min", "min", ep.hi)
        stages.append(t)
    if ep.table:
        t = _alu(shape, lambda *i, t=t: lookup(table, t(*i)), f"{name}.lut", "lut", None)
        stages.append(t)
    out = te.compute(out_shape, lambda *i, t=t: te.cast("int8", t(*i)), name=name)
    return stages, res32, out


def _through_requantizer(stages, res32, t, ep: Epilogue, out_shape, qparams, name, ch, addend=None, table=None):
    """The chain so far, then the pass through OUT's requantizer (registers from qparams, by
    the channel blocks of axis `ch`), which adds `addend` (an ACC tensor) on the way when given,
    and with ep.table looks its result up in the table (CTRL's table bit)."""
    def through(*i, t=t, q=qparams):
        x = t(*i) + addend(*i) if addend is not None else t(*i)
        y = requantize(x, q[i[ch], BIAS, i[-2], i[-1]], q[i[ch], MUL, i[-2], i[-1]], q[i[ch], CTRL, i[-2], i[-1]],
                       ep.shift)
        return lookup(table, y) if ep.table else y
    t = te.compute(t.shape, through, name=f"{name}.requant",
                   attrs={"vdla.requant": ep, "vdla.requant_addend": addend is not None})
    out = te.compute(out_shape, lambda *i: te.cast("int8", t(*i)), name=name)
    return stages + [t], res32, out


def _shr(shape, t, amount: int, name: str):
    return _alu(shape, lambda *i: t(*i) // (1 << amount), name, "shr", amount)


def _shift_steps(shift: int, step: int | None) -> list[int]:
    """`shift` as SHR amounts of at most `step` each (floor(floor(x / 2^a) / 2^b) = floor(x / 2^(a+b)))."""
    if not shift:
        return []
    step = min(step or shift, MAX_SHIFT)
    return [step] * (shift // step) + ([shift % step] if shift % step else [])
