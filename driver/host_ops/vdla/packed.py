"""The helpers of the VDLA graph operators in numpy: what each accelerator kernel computes, bit for bit, on
the SPEC §7 packed int8 layouts. They are the reference interpretation of a quantized graph
and the CPU fallback of last resort for its accelerator nodes; one module per op states its
semantics (conv, dense, pool, add, boundary), this one the layouts and the ALU epilogue they share.

Activations are (N/B, C/L, H, W, B, L) int8 (B = BATCH, L = BLOCK; padded lanes are zeros),
a matrix is (M/B, K/L, B, L). Weights, biases and multipliers are stored packed as the
kernels read them. Integer semantics are the hardware's (SPEC §3): int32 accumulation that
wraps, SHR = floor shift, MUL keeps the low 32 bits, the STORE keeps the low 8 bits."""
from __future__ import annotations

import numpy as np

from vdla.hw.alu_ops import table_lookup
from vdla.hw.requantizer import REGISTERS, requantize


def wrap(x):
    return np.asarray(x, dtype=np.int64).astype(np.int32).astype(np.int64)


def unpack_act(x):
    nb, cb, h, w, b, l = x.shape
    return x.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * l, h, w)


def pack_act(x, batch, block):
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n // batch, batch, c // block, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def channel_vector(v):
    """(O/L, B, L) packed per-channel vector -> (O,)."""
    return v[:, 0, :].reshape(-1).astype(np.int64)


def epilogue(acc, ep: dict, bias=None, scale=None, residual=None, rscale=None, table=None):
    """The ALU epilogue of vdla.compiler.topi.vdla.Epilogue on int32 accumulators with channels
    on axis 1, ending with the lookup table (ALU LUT) if it has one, or what the requantizer
    writes back (with `requantizer`, `bias` is the (O/L, 3, B, L) qparams); returns int8."""
    x = wrap(acc)
    shape = [1] * x.ndim
    shape[1] = -1
    if ep.get("bias"):
        x = wrap(x + bias.reshape(shape))
    if ep.get("offset"):
        x = wrap(x + ep["offset"])
    if ep.get("pre_shift"):
        x = x >> ep["pre_shift"]
    if ep.get("scale"):
        x = wrap(x * scale.reshape(shape))
    if ep.get("mul") is not None:
        x = wrap(x * ep["mul"])
    if ep.get("residual_scale"):       # another grid's residual: scaled, added before the shift
        x = wrap(x + wrap(residual.astype(np.int64) * rscale.reshape(shape)))
    if ep.get("requantizer"):          # OUT's write-back requantizer (no bias or scale step before)
        regs = [channel_vector(bias[:, r]).reshape(shape) for r in range(len(REGISTERS))]
        return requantize(x, *regs, table)
    if ep.get("shift"):
        if ep.get("round"):
            x = wrap(x + (1 << (ep["shift"] - 1)))
        x = x >> ep["shift"]
    if ep.get("residual") and not ep.get("residual_scale"):
        x = wrap(x + residual.astype(np.int64))
    if ep.get("lo") is not None:
        x = np.maximum(x, ep["lo"])
    if ep.get("hi") is not None:
        x = np.minimum(x, ep["hi"])
    if ep.get("table"):
        x = table_lookup(x, np.asarray(table).reshape(-1))
    return x.astype(np.int32).astype(np.int8)


def table_operand(inputs, ep):
    """The lookup table, the last operand of a kernel whose epilogue ends with one, or None."""
    return inputs[-1] if ep.get("table") else None


def extras(inputs, ep):
    """(bias, scale, residual, rscale) from the operands after x and w (kernel order: bias,
    scale, rscale, residual)."""
    rest = list(inputs[2:len(inputs) - (1 if ep.get("table") else 0)])
    if ep.get("requantizer"):          # the qparams (O/L, 3, B, L): the registers per channel block
        bias = rest.pop(0)
    else:
        bias = channel_vector(rest.pop(0)) if ep.get("bias") else None
    scale = channel_vector(rest.pop(0)) if ep.get("scale") else None
    rscale = channel_vector(rest.pop(0)) if ep.get("residual_scale") else None
    residual = rest.pop(0) if ep.get("residual") else None
    return bias, scale, residual, rscale


def windows(x, kh, kw, stride, pads, pad_value=0):
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=pad_value)
    return np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
