"""VdlaQuantize and VdlaDequantize: the conversions where a tensor crosses between the CPU's fp32
and the accelerator's packed int8 (SPEC §7).

A matrix holds the rows of an [..., K] tensor. With "group_rows": [G, M, Mp] its rows are G
groups of M (a batched MatMul's products), each padded with zero rows to Mp in the packed
matrix: a product of Mp rows tiles better than one of M (197 tokens is prime)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import HostOpError
from .packed import pack_act, unpack_act
from .semantics import VdlaSemantics


def _channel_scale(scale, x):
    """A scalar scale, or one per channel (axis 1; a padded list is cut to the channels)."""
    s = np.asarray(scale, np.float64)
    if s.ndim == 0 or s.size == 1:
        return s.reshape(())
    s = s[:x.shape[1]]
    return s.reshape((1, -1) + (1,) * (x.ndim - 2))


def nonfinite_values(x) -> str:
    """How many NaN, inf and -inf values `x` holds, in words ("3 NaN values, 1 inf value")."""
    counts = {"NaN": int(np.isnan(x).sum()), "inf": int(np.isposinf(x).sum()), "-inf": int(np.isneginf(x).sum())}
    return ", ".join(f"{n} {what} value{'s' * (n > 1)}" for what, n in counts.items() if n)


def check_finite(x) -> None:
    """A NaN cast to int8 is whatever the machine makes of it, and ±inf only saturates: either
    way the accelerator computes a plausible-looking answer from no number at all, so the
    quantization refuses them (the executor names the step, quantize_<tensor>)."""
    if x.size == 0 or (np.isfinite(np.min(x)) and np.isfinite(np.max(x))):   # NaN, ±inf show there
        return
    bad = ~np.isfinite(x)
    held = nonfinite_values(x)
    first = [int(i) for i in np.argwhere(bad)[0]]
    raise HostOpError(f"the tensor quantized for the accelerator holds {held} (of {x.size}, the first at "
                      f"index {first}) where the accelerator takes int8: a non-finite number has no int8 value; "
                      f"check the data fed to the model, or the CPU step that computed the tensor")


def quantize_codes(x, scale, zero_point: int = 0):
    """fp32 -> int8 codes of the same shape: round half to even, add the zero point, saturate
    (scale per channel or one).
    In fp32, in place: a tensor's fp64 temporaries (a ViT's 600 KB rows become 1.2 MB each) cost
    the allocator fresh pages on every call, which made this conversion 20 times its arithmetic."""
    x = np.asarray(x, np.float32)
    check_finite(x)
    t = np.divide(x, _channel_scale(scale, x).astype(np.float32))
    np.rint(t, out=t)
    if zero_point:
        t += np.float32(zero_point)
    return np.clip(t, -128, 127, out=t).astype(np.int8)


def pack_codes(q, batch, block):
    """int8 NCHW (or NC) -> packed (SPEC §7), the batch and the channels padded with zeros."""
    if q.ndim == 2:
        q = q[:, :, None, None]
    n, c = q.shape[:2]
    nn_, cc = -(-n // batch) * batch, -(-c // block) * block
    q = np.pad(q, ((0, nn_ - n), (0, cc - c), (0, 0), (0, 0)))
    return pack_act(q, batch, block)


def quantize_packed(x, scale, batch, block, zero_point: int = 0):
    """fp32 NCHW (or NC) -> int8 packed (quantize_codes, pack_codes)."""
    return pack_codes(quantize_codes(x, scale, zero_point), batch, block)


def im2col(q, kernel, stride: int, pads, pad_value: int = 0):
    """int8 codes (N, C, H, W) -> the columns a (kh, kw)/stride convolution reads, as channels
    (N, C*kh*kw, OH, OW), channel c*kh*kw + i*kw + j holding tap (i, j) of input channel c;
    the padding holds `pad_value` (the code of a real zero)."""
    kh, kw = kernel
    top, left, bottom, right = pads
    qp = np.pad(q, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=pad_value)
    win = np.lib.stride_tricks.sliding_window_view(qp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    n, c, oh, ow = win.shape[:4]
    return np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * kh * kw, oh, ow)


def steps_of(inputs, attrs):
    """A conversion's quantization steps (one, or one per channel): its second operand where the
    compiler made them one (vdla.compiler.vdla.edge_steps), else its "scale" attribute."""
    return inputs[1] if len(inputs) > 1 and inputs[1] is not None else attrs["scale"]


def _quantize(inputs, attrs):
    x = inputs[0]
    steps = steps_of(inputs, attrs)
    if attrs.get("matrix"):          # a matrix holds the rows of an [..., K] tensor
        x = np.asarray(x).reshape(-1, x.shape[-1])
        if attrs.get("group_rows"):
            groups, rows, padded = attrs["group_rows"]
            x = np.pad(x.reshape(groups, rows, -1), ((0, 0), (0, padded - rows), (0, 0))).reshape(groups * padded, -1)
    zp = attrs.get("zero_point", 0)
    if attrs.get("im2col"):          # a stem's few channels: its taps become channels (Quantizer.im2col_input)
        cols = attrs["im2col"]
        codes = im2col(quantize_codes(x, steps, zp), cols["kernel"], cols["stride"], cols["pads"], zp)
        return [pack_codes(codes, attrs["batch"], attrs["block"])]
    packed = quantize_packed(x, steps, attrs["batch"], attrs["block"], zp)
    if attrs.get("pads"):            # the padding a convolution reads, as the code of a real zero
        top, left, bottom, right = attrs["pads"]
        packed = np.pad(packed, ((0, 0), (0, 0), (top, bottom), (left, right), (0, 0), (0, 0)), constant_values=zp)
    if attrs.get("matrix"):
        packed = packed.reshape(packed.shape[0], packed.shape[1], packed.shape[4], packed.shape[5])
    return [packed]


def _dequantize(inputs, attrs):
    q = inputs[0]
    shape = attrs["shape"]
    rows, cols = shape[0], shape[1]
    if q.ndim == 4:           # a matrix (M/B, K/L, B, L): the rows of a [..., K] tensor
        q = q.reshape(q.shape[0], q.shape[1], 1, 1, q.shape[2], q.shape[3])
        rows, cols = math.prod(shape[:-1]), shape[-1]
    x = unpack_act(q)
    if attrs.get("group_rows"):
        groups, per, padded = attrs["group_rows"]
        x = x[:groups * padded].reshape(groups, padded, -1)[:, :per].reshape(groups * per, -1)
    x = x[:rows, :cols]
    s = _channel_scale(steps_of(inputs, attrs), x).astype(np.float32)
    zp = attrs.get("zero_point", 0)
    return [((x.astype(np.float32) - np.float32(zp)) * s).reshape(shape)]


QUANTIZE = VdlaSemantics("VdlaQuantize", _quantize, kernel=False, finite_input=True)
DEQUANTIZE = VdlaSemantics("VdlaDequantize", _dequantize, kernel=False)
