"""The int8 arithmetic of quantization for the accelerator: scales from calibrated ranges,
fixed-point multipliers, weight steps, and the requantization epilogues: OUT's write-back
requantizer where nothing else joins the output; per-channel multiply and shifts on the ALU,
with the rounding folded into the bias, where a residual or a table does; VTA mode's
power-of-two shift."""
from __future__ import annotations

import math

import numpy as np

from vdla.hw.alu_ops import IMM_MAX, SHR_MAX
from vdla.hw.errors import CompileError
from vdla.hw.requantizer import MUL_BITS

from ..codegen.vdla import VtaCompatError
from ..intrin.vdla import REQUANT_SHIFT_MAX
from ..topi.vdla import Epilogue


# The largest power of two an ALU MUL immediate holds (the accumulator's headroom multiplier).
MUL_IMM_SHIFT = IMM_MAX.bit_length() - 1

# A scale is never zero (an all-zero tensor); the floor is far below any real signal: scales
# are relative, and a network whose activations shrink to 1e-11 (random weights through
# EfficientNet's squeeze-excitation) must keep its weights' resolution, which a floor of
# 1e-12 on the weight steps rounded to zero.
TINY = 1e-30


def qdq_grid(pair: dict) -> tuple[float, int]:
    """(step, zero point on the accelerator's signed codes) of a QDQ model's quantization pair
    (a range's "qdq"): a uint8 grid's zero point moves down by 128."""
    return float(pair["scale"]), int(pair["zero_point"]) - (128 if pair["dtype"] == "uint8" else 0)


def tensor_step(stats, tensor) -> float:
    """One quantization step for the whole tensor: its calibrated range / 127."""
    return max(float(stats[tensor]["range"]), TINY) / 127.0


def channel_scale(stats, tensor, channels: int) -> np.ndarray:
    """One scale per channel (axis 1): the calibrated per-channel ranges / 127, or the tensor's
    range for every channel where only that is known (a QDQ model's quantizers)."""
    info = stats[tensor]
    per = info.get("channel_range")
    if per is not None and len(per) == channels:
        per = np.asarray(per, np.float64)
        # a channel that stayed (near) zero in calibration gets a sane scale, not a vanishing one
        # that would swamp the fixed-point multipliers of the others
        return np.maximum(per, max(0.01 * float(per.max()), TINY)) / 127.0
    return np.full(channels, tensor_step(stats, tensor))


def channel_peak(stats, tensor, channels: int) -> np.ndarray | None:
    info = stats.get(tensor)
    if info is None:
        return None
    per = info.get("channel_max")
    return np.asarray(per, np.float64) if per is not None and len(per) == channels else \
        np.full(channels, float(info["max"]))


def fixed_point(m, limit_bits=15, max_shift=31):
    """The largest shift S with max(m) * 2^S < 2^limit_bits; -> (S, integer multipliers)."""
    top = float(np.max(m)) if np.size(m) else 1.0
    s = max_shift if top <= 0 else min(max_shift, int(math.floor(math.log2(((1 << limit_bits) - 1) / top))))
    s = max(s, 0)
    return s, np.rint(np.asarray(m) * (1 << s)).astype(np.int64)


def worst_acc(w_q) -> float:
    """The largest accumulator any int8 input can produce (no range known for the output)."""
    return 128.0 * float(np.abs(w_q.astype(np.int64)).reshape(w_q.shape[0], -1).sum(axis=1).max())


def accumulator_peak(peak, s_w, w_q) -> float:
    """The largest accumulator magnitude, in accumulator units: the output's measured peak over
    the weight step, or the worst case the weights allow."""
    return float((np.asarray(peak) / s_w).max()) if peak is not None else worst_acc(w_q)


def weight_step(w, s_y) -> np.ndarray:
    """Per output channel, the step of its int8 weights. A channel whose weights are all zero
    (dead, or reading input channels that were never nonzero in calibration) accumulates nothing
    but its bias; its step is the output's, so that bias stays a few hundred accumulator units
    instead of overflowing int32 as it would in steps of a vanishing floor."""
    top = np.abs(w).reshape(w.shape[0], -1).max(axis=1)
    return np.where(top > 0, np.maximum(top, TINY) / 127.0, np.asarray(s_y, np.float64))


def _fixed_point(m, acc_peak, limit_bits: int, max_shift: int):
    """(pre-shift p, shift S, multipliers M) of acc + bias >> p, * M[o], >> S: p keeps
    |acc| >> p below 2^16 so that the product with a `limit_bits` M fits int32."""
    p = max(0, int(math.ceil(math.log2(max(acc_peak, 1.0) * 2))) - 16)
    if p > SHR_MAX:
        raise ShiftRange(f"its accumulator peaks at {acc_peak:.3g} weight steps, which needs a pre-shift of {p}; "
                         f"the ALU shifts by 0..{SHR_MAX} (a bias that dwarfs the weights' products)")
    shift, mult = fixed_point(np.asarray(m) * (1 << p), limit_bits, min(31 - p, max_shift))
    return p, shift, np.maximum(mult, 0)


def _bias(bias_real, p: int, mult, offset) -> np.ndarray:
    """The int32 bias: `bias_real` accumulator units, plus `offset` fixed-point units (after the
    multiply, per channel) and half a pre-shift step, as accumulator units: both shifts round
    to nearest through the bias."""
    rounding = np.where(mult > 0, (2.0 ** p) / np.maximum(mult, 1) * offset, 0.0) + (2.0 ** (p - 1) if p else 0.0)
    return np.clip(np.rint(bias_real + rounding), -(1 << 31), (1 << 31) - 1).astype(np.int32)


def requant_multiply(m, bias_real, acc_peak, act, s_y, z_y=0):
    """Per-channel requantization: acc + bias >> p, * M[o], >> S, clip (15-bit M); the bias
    holds half an output step and the output's zero point."""
    p, shift, mult = _fixed_point(m, acc_peak, 15, 31)
    bias_q = _bias(bias_real, p, mult, (0.5 + z_y) * 2.0 ** shift)
    lo, hi = _clip(act, s_y, z_y)
    ep = Epilogue(bias=True, pre_shift=p, scale=True, shift=shift, lo=lo, hi=hi)
    return ep, bias_q, mult.astype(np.int32)


def _register_bias(bias, units: str) -> np.ndarray:
    """The requantizer's int32 BIAS of whole accumulator units, or ShiftRange naming its size."""
    top = float(np.abs(bias).max(initial=0.0))
    if top >= 1 << 31:
        raise ShiftRange(f"its bias reaches {top:.3g} {units}, beyond the int32 accumulator and the requantizer's "
                         "bias register (a bias that dwarfs the weights' products)")
    return np.asarray(bias).astype(np.int32)


def requant_writeback(m, bias_real, act, s_y, z_y=0):
    """Per-channel requantization by OUT's write-back requantizer (vdla.hw.requantizer):
    (acc + bias) * M[o] rounded >> S, + z, clip; M below 2^(MUL_BITS - 1), no pre-shift, so the
    accumulator keeps all its bits; the rounding and the zero point are the unit's own. ->
    (epilogue, int32 bias, multipliers)."""
    bias_q = _register_bias(np.rint(bias_real), "weight steps")
    shift, mult = fixed_point(m, MUL_BITS - 1, REQUANT_SHIFT_MAX)
    lo, hi = _clip(act, s_y, z_y)
    return Epilogue(requantizer=True, shift=shift, zero=int(z_y), lo=lo, hi=hi), bias_q, np.maximum(mult, 0)


def requant_writeback_residual(m, bias_real, acc_peak, act, s_y, z_y, ratio, z_r):
    """requant_writeback with a residual Add fused in: the residual's codes r on their own grid
    join the accumulator in its units, (r - z_r) * ratio[o] / m[o] of them, as an ALU MUL by a
    per-channel factor and an ADD; the accumulator is first multiplied by 2^k (one ALU MUL by
    an immediate), as large as int32 allows, so that the factor keeps its fraction. The sum is
    rounded once, by the requantizer. -> (epilogue, bias, multipliers, the residual's factors).
    Raises ShiftRange where the factor would keep fewer than 8 bits (requant_residual then)."""
    m = np.maximum(np.asarray(m, np.float64), TINY)
    unit = np.asarray(ratio, np.float64) / m                 # accumulator units per residual step
    bias_real = np.asarray(bias_real, np.float64)
    head = float(acc_peak) + float(np.abs(bias_real).max(initial=0.0)) + 256.0 * float(unit.max())
    k = int(min(MUL_IMM_SHIFT, max(0, math.floor(math.log2((1 << 30) / max(head, 1.0))))))
    rmult = np.rint(unit * 2.0 ** k)
    if float(rmult.min(initial=1 << 8)) < 1 << 8:
        raise ShiftRange(f"its residual's step is {float(unit.min()):.3g} accumulator units, which the headroom "
                         f"of int32 ({head:.3g} at the peak) leaves fewer than 8 bits")
    bias_q = _register_bias(np.rint(bias_real * 2.0 ** k) - z_r * rmult, "scaled weight steps")
    shift, mult = fixed_point(m / 2.0 ** k, MUL_BITS - 1, REQUANT_SHIFT_MAX)
    lo, hi = _clip(act, s_y, z_y)
    ep = Epilogue(requantizer=True, mul=(1 << k) if k else None, residual=True, residual_scale=True, shift=shift,
                  zero=int(z_y), lo=lo, hi=hi)
    return ep, bias_q, np.maximum(mult, 0), rmult.astype(np.int32)


def requant_residual(m, bias_real, acc_peak, act, s_y, z_y, ratio, z_r):
    """requant_multiply with a residual Add fused in (Epilogue.residual_scale): the residual's
    codes r on their own grid join as (r - z_r) * ratio[o] output steps, in the same fixed point
    as the accumulator's part, so the sum is rounded once. Headroom: the accumulator's part
    stays below 2^30 (14-bit multipliers), the residual's below 2^29 (its factors below 2^22),
    so the sum fits int32; the shift is as long as both allow. -z_r * its factor joins the bias
    with the rounding and the output's zero point. -> (epilogue, bias, multipliers, the
    residual's factors)."""
    ratio = np.asarray(ratio, np.float64)
    cap = int(math.floor(math.log2(((1 << 22) - 1) / max(float(ratio.max()), TINY))))
    p, shift, mult = _fixed_point(m, acc_peak, 14, cap)
    if shift < 8:
        raise ShiftRange(f"its residual operand's steps are {float(ratio.max()):.3g} output steps, which leaves a "
                         f"shift of {shift}: too coarse a fixed point to add it in")
    rmult = np.rint(ratio * 2.0 ** shift).astype(np.int64)
    bias_q = _bias(bias_real, p, mult, (0.5 + z_y) * 2.0 ** shift - z_r * rmult)
    lo, hi = _clip(act, s_y, z_y)
    ep = Epilogue(bias=True, pre_shift=p, scale=True, shift=shift, residual=True, residual_scale=True, lo=lo, hi=hi)
    return ep, bias_q, mult.astype(np.int32), rmult.astype(np.int32)


def _clip(act, s_y, z_y) -> tuple[int, int]:
    """(lo, hi) codes of the output's clip: int8, a ReLU's zero, a Clip's max."""
    lo, hi = -128, 127
    if act is not None:
        lo = z_y                                   # the code of a real zero
        if act.op == "Clip" and act.attrs.get("max") is not None:
            hi = int(min(127, np.min(np.rint(act.attrs["max"] / np.asarray(s_y))) + z_y))
    return lo, hi


def power_of_two_step(w, s_y, name: str) -> np.ndarray:
    """VTA mode: the weight scale (one per tensor, per output channel for the callers) that
    is the output's scale over a power of two, 2^-k, as fine as int8 weights allow; the
    requantization is then a shift by k. Needs one output scale for every channel."""
    s_y = np.asarray(s_y, np.float64)
    if not np.allclose(s_y, s_y[0]):
        raise VtaCompatError(f"{name}: its output has one scale per channel; VTA mode requantizes with one shift, "
                             "so compile without per-channel activation scales")
    top = max(float(np.abs(w).max()), 1e-30)
    k = min(31, int(math.floor(math.log2(127.0 * s_y[0] / top))))
    if k < 0:
        raise VtaCompatError(f"{name}: a single weight times the largest input exceeds the output's range, so the "
                             "weights would need a step coarser than the output's (a left shift), which VTA mode "
                             "does not requantize with")
    return np.full(w.shape[0], s_y[0] / (1 << k))


def requant_shift(s_w, s_y, bias_real, act):
    """VTA mode's requantization: acc + bias >> k with s_w = s_y / 2^k (_power_of_two_step);
    the rounding (half an output step) and nothing else lives in the bias."""
    k = int(round(math.log2(float(s_y[0] / s_w[0]))))
    rounding = 2.0 ** (k - 1) if k else 0.0
    bias_q = np.clip(np.rint(np.asarray(bias_real) + rounding), -(1 << 31), (1 << 31) - 1).astype(np.int64)
    lo, hi = -128, 127
    if act is not None:
        lo = 0
        if act.op == "Clip" and act.attrs.get("max") is not None:
            hi = int(min(127, np.min(np.rint(act.attrs["max"] / np.asarray(s_y)))))
    return Epilogue(bias=True, shift=k, lo=lo, hi=hi), bias_q.astype(np.int32)


def padded(scale, block: int) -> np.ndarray:
    """A per-channel scale vector padded with ones to a whole number of channel blocks."""
    scale = np.asarray(scale, np.float64)
    return np.concatenate([scale, np.ones((-len(scale)) % block)])


class ShiftRange(ValueError):
    # (never escapes: quantize.py turns it into Unquantizable, naming the node)
    """A requantization shift past the ALU's (raised where the node is not known)."""


class Unquantizable(CompileError, ValueError):
    """An accelerator node whose requantization the ALU cannot express (a shift past its range:
    an output dominated by a bias millions of weight steps wide); placement moves it to the CPU."""

    def __init__(self, node: str, reason: str):
        super().__init__(f"node {node!r}: {reason}")
        self.node, self.reason = node, reason
