"""The accelerator's edge conversions as CPU kernels: fp32 tensors into the packed int8 layouts of
SPEC §7 and back, computing bit for bit what their numpy semantics compute
(vdla.driver.host_ops.vdla.boundary: VdlaQuantize, VdlaDequantize; .matmul: VdlaQuantizeWeights).

As host steps they cost ~150 us a call in numpy's padding and layout copies before any
arithmetic: 40 ms of a ViT-Tiny's CPU side. A code is clip(round_half_even(x / step) + zero
point) in fp32, the division kept (the numpy semantics divide; a product with the reciprocal
differs in the last bit, and so in the code at a tie). `steps` is a literal, or a float32 tensor
of one step or of one per channel (padded to whole blocks): an operand, so that one kernel
serves every conversion of a shape (vdla.compiler.vdla.edge_steps). Non-finite inputs have no
code; the executor refuses them before the kernel runs (vdla.driver.executor), as the host
step does."""
from __future__ import annotations

import math

from .. import te
from ..tir import expr as E
from . import tags
from .transform import _unravel   # (only a row's leading indices: the lanes' axis stays its own)


def _step(steps, channel):
    """The step of `channel`: the literal, the tensor's one step, or its step of that channel."""
    if not isinstance(steps, te.Tensor):
        return E.Const(float(steps), "float32")
    return steps(0) if steps.shape[0] == 1 else steps(channel)


def _check_steps(steps, channels: int, block: int) -> None:
    if isinstance(steps, te.Tensor) and steps.shape[0] != 1 and steps.shape[0] < _ceil(channels, block) * block:
        raise ValueError(f"{steps.shape[0]} steps for {channels} channels: one, or one per channel of whole "
                         f"blocks of {block}")


def _code(v, step, zero_point: int, lo: int, hi: int):
    """int8 code of a finite fp32 value: the clamps as compares, which x86 does in one
    instruction each (min/max must also order NaN, which a finite input never is)."""
    r = te.round(v / step)
    if zero_point:
        r = r + E.Const(float(zero_point), "float32")
    r = E.Select(E.GT(r, E.Const(float(hi), "float32")), E.Const(float(hi), "float32"), r)
    r = E.Select(E.LT(r, E.Const(float(lo), "float32")), E.Const(float(lo), "float32"), r)
    return te.cast("int8", r)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def quantize_matrix(x, steps, batch: int, block: int, zero_point: int = 0, group_rows=None):
    """fp32 [..., K] -> int8 (R/B, K/L, B, L): the rows of x, with `group_rows` [G, M, Mp] in G
    groups of M rows each padded with rows of 0.0 to Mp (their code the zero point); the lanes
    past K and the rows past the last BATCH tile are 0."""
    k = x.shape[-1]
    lead = [int(d) for d in x.shape[:-1]]
    m = math.prod(lead)
    groups, per, padded = group_rows if group_rows else (1, m, m)
    if groups * per != m:
        raise ValueError(f"quantize_matrix: {groups} groups of {per} rows, the tensor has {m}")
    total = groups * padded
    _check_steps(steps, k, block)

    def f(mb, kb, b, lane):
        r, c = mb * batch + b, kb * block + lane
        g, i = (r // padded, r % padded) if group_rows else (0, r)
        value = _code(x(*_unravel(g * per + i if group_rows else r, lead), c), _step(steps, c), zero_point, -128, 127)
        if group_rows and per < padded:      # a group's padding rows: zeros before quantization
            value = te.if_then_else(i < per, value, E.Const(zero_point, "int8"))
        valid = [cond for cond, needed in ((c < k, k % block), (r < total, total % batch)) if needed]
        return te.if_then_else(E.all_of(*valid), value, E.Const(0, "int8")) if valid else value
    return te.compute((_ceil(total, batch), _ceil(k, block), batch, block), f, name="vdla_quantize",
                      tag=tags.INJECTIVE)


def quantize_activation(x, steps, batch: int, block: int, zero_point: int = 0, pads=None):
    """fp32 NCHW -> int8 (N/B, C/L, H', W', B, L); `pads` [top, left, bottom, right] widen H and W
    with pixels whose every lane holds the zero point (the code of a real zero), padded lanes
    of the image 0."""
    n, c, h, w = x.shape
    top, left, bottom, right = pads or (0, 0, 0, 0)
    _check_steps(steps, c, block)

    def f(nb, cb, y, z, b, lane):
        i, ch = nb * batch + b, cb * block + lane
        yy, zz = y - top, z - left
        inside = [cond for cond, needed in ((yy >= 0, top), (yy < h, bottom), (zz >= 0, left), (zz < w, right))
                  if needed]
        real = [cond for cond, needed in ((i < n, n % batch), (ch < c, c % block)) if needed]
        value = _code(x(i, ch, yy, zz), _step(steps, ch), zero_point, -128, 127)
        if real:
            value = te.if_then_else(E.all_of(*real), value, E.Const(0, "int8"))
        if inside:
            value = te.if_then_else(E.all_of(*inside), value, E.Const(zero_point, "int8"))
        return value
    shape = (_ceil(n, batch), _ceil(c, block), h + top + bottom, w + left + right, batch, block)
    return te.compute(shape, f, name="vdla_quantize", tag=tags.INJECTIVE)


def quantize_im2col(x, steps, batch: int, block: int, kernel, stride: int, pads, zero_point: int = 0):
    """fp32 NCHW -> int8 (N/B, C*kh*kw/L, OH, OW, B, L): the columns a (kh, kw)/stride convolution
    reads, as channels (channel c*kh*kw + i*kw + j holds tap (i, j) of input channel c, its
    step that of c); the padding the windows read holds the zero point, padded lanes 0."""
    n, c, h, w = x.shape
    kh, kw = kernel
    top, left, bottom, right = pads
    taps = kh * kw
    oh, ow = (h + top + bottom - kh) // stride + 1, (w + left + right - kw) // stride + 1
    _check_steps(steps, c, block)

    def f(nb, cb, y, z, b, lane):
        i, col = nb * batch + b, cb * block + lane
        ch, tap = col // taps, col % taps
        yy, zz = y * stride + tap // kw - top, z * stride + tap % kw - left
        value = _code(x(i, ch, yy, zz), _step(steps, ch), zero_point, -128, 127)
        inside = [cond for cond, needed in ((yy >= 0, top), (yy < h, bottom or (oh - 1) * stride + kh > h),
                                            (zz >= 0, left), (zz < w, right or (ow - 1) * stride + kw > w)) if needed]
        if inside:
            value = te.if_then_else(E.all_of(*inside), value, E.Const(zero_point, "int8"))
        real = [cond for cond, needed in ((i < n, n % batch), (col < c * taps, (c * taps) % block)) if needed]
        return te.if_then_else(E.all_of(*real), value, E.Const(0, "int8")) if real else value
    shape = (_ceil(n, batch), _ceil(c * taps, block), oh, ow, batch, block)
    return te.compute(shape, f, name="vdla_quantize", tag=tags.INJECTIVE)


def dequantize(q, steps, shape, zero_point: int = 0, group_rows=None):
    """packed int8 -> fp32 `shape`: (code - zero point) * step. A 4-D q is a matrix (the rows of
    a [..., K] tensor, `group_rows` as quantize_matrix's), a 6-D one NCHW."""
    shape = [int(d) for d in shape]

    def value(code, channel):
        v = te.cast("float32", code)
        if zero_point:
            v = v - E.Const(float(zero_point), "float32")
        return v * _step(steps, channel)
    if q.ndim == 6:
        _, _, _, _, batch, block = q.shape
        _check_steps(steps, shape[1], block)
        return te.compute(shape, lambda i, ch, y, z: value(q(i // batch, ch // block, y, z, i % batch, ch % block), ch),
                          name="vdla_dequantize", tag=tags.INJECTIVE)
    _, _, batch, block = q.shape
    _check_steps(steps, shape[-1], block)
    lead = shape[:-1]
    groups, per, padded = group_rows if group_rows else (1, math.prod(lead), math.prod(lead))

    def f(*idx):
        r = E.Const(0, "int32")
        for i, d in zip(idx[:-1], lead):
            r = r * d + i
        if group_rows:
            r = (r // per) * padded + r % per
        c = idx[-1]
        return value(q(r // batch, c // block, r % batch, c % block), c)
    return te.compute(shape, f, name="vdla_dequantize", tag=tags.INJECTIVE)


def quantize_weights(b, steps, batch_shape, block: int):
    """fp32 [..., K, N] (batch dims broadcast to `batch_shape`) -> int8 (G, N/L, K/L, L, L), G
    weight matrices of B transposed: round half to even, saturate to ±127 (symmetric
    weights), padded lanes 0."""
    k, n = b.shape[-2:]
    lead = tuple(b.shape[:-2])
    batch = tuple(int(d) for d in batch_shape)
    full = tuple(max(p, q) for p, q in zip((1,) * (len(batch) - len(lead)) + lead,
                                           (1,) * (len(lead) - len(batch)) + batch))
    groups = math.prod(full)
    _check_steps(steps, n, block)

    def f(g, nb, kb, o, i):
        idx = _unravel(g, full)[len(full) - len(lead):]
        idx = [E.Const(0, "int32") if d == 1 else j for j, d in zip(idx, lead)]
        row, col = kb * block + i, nb * block + o
        valid = [c for c, needed in ((row < k, k % block), (col < n, n % block)) if needed]
        value = _code(b(*idx, row, col), _step(steps, col), 0, -127, 127)
        return te.if_then_else(E.all_of(*valid), value, E.Const(0, "int8")) if valid else value
    return te.compute((groups, _ceil(n, block), _ceil(k, block), block, block), f, name="vdla_quantize_weights",
                      tag=tags.INJECTIVE)
