"""The compiler's VTA mode (vta_compat=True): kernels whose instruction streams VTA's hardware
computes exactly like VDLA (vdla.hw.vta states the differences; vdla.simulator.vta_check
proves a stream free of them).

What changes against the default mode:
- shifts longer than VTA's SHR range become several SHRs (floors compose exactly);
- no ALU MUL: an epilogue multiplier of 1 is dropped, others are refused (requantize with
  shifts), except where the product can move onto the GEMM core exactly: int8 data is
  brought into the accumulators by a GEMM with a scaled identity (or per-channel diagonal)
  weight block instead of LOAD ACC_8BIT, and that weight carries an int8 factor for free
  (pooling's averaging multiplier, a residual add's per-operand factors);
- no LOAD ACC_8BIT (the GEMM above), no pad_min: padding reads zeros, so an input whose
  zero point is -128, or max pooling of a possibly negative input, is refused when it
  actually pads (tiles that overhang the image pad too, but those outputs are never stored,
  so their padding value does not matter and is zero).
The compiler never emits ALU resets, padded WGT/UOP loads or reads of unwritten SRAM in
either mode (vta_check confirms it in the tests).
"""
from __future__ import annotations

import numpy as np

from vdla.hw import vta

from ... import te
from ...codegen.vdla.errors import VtaCompatError
from ...intrin import vdla as intrin
from .epilogue import Epilogue

SHIFT_STEP = vta.SHR_MAX          # the longest shift one SHR may take in VTA mode
INT8_MIN, INT8_MAX = -128, 127   # a factor carried by a GEMM weight is one int8 element


def vta_epilogue(ep: Epilogue, name: str) -> Epilogue:
    """`ep` as VTA can run it (a multiplier of 1 dropped); VtaCompatError naming the kernel
    for what VTA cannot compute."""
    if ep.scale:
        raise VtaCompatError(f"{name}: the epilogue multiplies by a per-channel scale (ALU MUL), which VTA's ALU "
                             "lacks; requantize with shifts (power-of-two scales) for VTA")
    if ep.mul is not None and ep.mul != 1:
        raise VtaCompatError(f"{name}: the epilogue multiplies by {ep.mul} (ALU MUL), which VTA's ALU lacks; "
                             "requantize with shifts (power-of-two scales) for VTA")
    if ep.residual:
        raise VtaCompatError(f"{name}: the epilogue adds an int8 residual, loaded with LOAD ACC_8BIT, which VTA "
                             "lacks; add residuals with compile_add (its operands go through the GEMM core)")
    if ep.mul == 1:
        from dataclasses import replace
        return replace(ep, mul=None)
    return ep


def zero_padding(name: str, what: str, pads, pad_value: int) -> int:
    """The padding value VTA mode uses (zeros); VtaCompatError if the layer really pads with
    something else."""
    if pad_value != vta.PAD_VALUE and any(pads):
        raise VtaCompatError(f"{name}: {what} pads with {pad_value} (LOAD pad_min) but VTA's DMA pads with "
                             f"{vta.PAD_VALUE} only; quantize the input with zero point 0 (or give a max "
                             "pooling of a non-negative input pad_value=0)")
    return vta.PAD_VALUE


def check_int8_factor(name: str, what: str, value: int) -> None:
    if not INT8_MIN <= value <= INT8_MAX:
        raise VtaCompatError(f"{name}: {what}={value} does not fit an int8 weight; without ALU MUL, VTA mode "
                             f"multiplies on the GEMM core, by factors in {INT8_MIN}..{INT8_MAX}")


def gemm_into_acc(x, w, shape, name: str, per_channel: bool = False):
    """acc[n, c, ..., b, l] = sum_k x[n, c, ..., b, k] * w[(c,) l, k]: int8 data into the
    accumulators on the GEMM core (w = scaled identity, or one diagonal block per channel
    block). The whole reduction is one GEMM micro-op, which the backend lowers to a reset
    and an accumulating GEMM."""
    block = int(x.shape[-1])
    k = te.reduce_axis((0, block), "k")

    def f(*i):
        wv = w[i[1], i[-1], k.var] if per_channel else w[i[-1], k.var]
        return te.sum(te.cast("int32", x(*i[:-1], k.var)) * te.cast("int32", wv), axis=k)
    return te.compute(shape, f, name=name)


def schedule_gemm_into_acc(s, config, stage, attach) -> None:
    """Place a gemm_into_acc stage in the accumulators at `attach` (stage, axis): its input
    tile is copied into vdla.inp (any padding stage inlined: the DMA writes the zeros), its
    weight block into vdla.wgt, and the element GEMM is tensorized."""
    x_src, w = stage.op.input_tensors
    s[stage].set_scope(intrin.SCOPE_ACC)
    s[stage].compute_at(*attach)
    xl = s.cache_read(x_src, intrin.SCOPE_INP, [s[stage]])
    if not s[x_src].is_placeholder:
        s[x_src].compute_inline()
    wl = s.cache_read(w, intrin.SCOPE_WGT, [s[stage]])
    axes = s[stage].op.axis
    s[xl].compute_at(s[stage], axes[0])
    s[wl].compute_at(s[stage], axes[0])
    s[stage].tensorize(axes[-2], intrin.gemm(config))


def scaled_identity(block: int, factor: int = 1) -> np.ndarray:
    """The (L, L) int8 weight block factor * I: a GEMM with it copies (and scales) int8 data
    into the accumulators."""
    check_int8_factor("scaled_identity", "factor", int(factor))
    return (np.eye(block, dtype=np.int64) * int(factor)).astype(np.int8)


def diagonal_weight(factors, block: int) -> np.ndarray:
    """(C/L, L, L) int8 blocks with channel c's factor at [c // L, c % L, c % L] (zero for
    padded channels): per-channel int8 factors applied on the GEMM core."""
    f = np.asarray(factors, dtype=np.int64).reshape(-1)
    bad = np.flatnonzero((f < INT8_MIN) | (f > INT8_MAX))
    if bad.size:
        raise VtaCompatError(f"diagonal_weight: channel {int(bad[0])} factor {int(f[bad[0]])} does not fit an int8 "
                             f"weight ({INT8_MIN}..{INT8_MAX})")
    cb = -(-f.size // block)
    out = np.zeros((cb, block, block), np.int8)
    ch = np.arange(f.size)
    out[ch // block, ch % block, ch % block] = f
    return out
