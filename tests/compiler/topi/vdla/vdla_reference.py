"""numpy oracles for the VDLA operators, in plain NCHW / OIHW / (M, K) terms, and the SPEC §7
packing the tests use to hand them to a kernel. Written from the SPEC's semantics: int32
accumulation that wraps, ALU ops on int32 (MUL keeps the low 32 bits, SHR floors), the
STORE's int8 truncation."""
import numpy as np

from vdla.driver.programs.layout import pack_activation, pack_conv_weight, unpack_activation


def wrap32(x):
    return np.asarray(x, dtype=np.int64).astype(np.int32).astype(np.int64)


def conv_nchw(x, w, stride, pads):
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    o, _, kh, kw = w.shape
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    return wrap32(np.einsum("nchwij,ocij->nohw", win, w.astype(np.int64)))


def depthwise_nchw(x, w, stride, pads):
    """w (C, 1, KH, KW)."""
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    kh, kw = w.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    return wrap32(np.einsum("nchwij,cij->nchw", win, w[:, 0].astype(np.int64)))


def epilogue(acc, ep, bias=None, residual=None, channel_axis=1):
    """acc int32 (any layout with channels on channel_axis) -> the int8 the STORE writes."""
    x = wrap32(acc)
    if ep.bias:
        shape = [1] * x.ndim
        shape[channel_axis] = -1
        x = wrap32(x + bias.reshape(shape))
    if ep.mul is not None:
        x = wrap32(x * ep.mul)
    if ep.shift:
        if ep.round:
            x = wrap32(x + (1 << (ep.shift - 1)))
        x = x >> ep.shift
    if ep.residual:
        x = wrap32(x + residual.astype(np.int64))
    if ep.lo is not None:
        x = np.maximum(x, ep.lo)
    if ep.hi is not None:
        x = np.minimum(x, ep.hi)
    return x.astype(np.int32).astype(np.int8)


def pack_bias(bias, batch, block):
    o = -(-bias.shape[0] // block) * block
    b = np.zeros(o, np.int32)
    b[:bias.shape[0]] = bias
    return np.ascontiguousarray(np.broadcast_to(b.reshape(-1, 1, block), (o // block, batch, block)))


def pack_depthwise_weight(w, block):
    """(C, 1, KH, KW) -> (C/L, KH, KW, L, L) with each channel's taps on its block's diagonal."""
    c, _, kh, kw = w.shape
    cb = -(-c // block)
    out = np.zeros((cb, kh, kw, block, block), np.int8)
    for ch in range(c):
        out[ch // block, :, :, ch % block, ch % block] = w[ch, 0]
    return out


__all__ = ["wrap32", "conv_nchw", "depthwise_nchw", "epilogue", "pack_bias", "pack_depthwise_weight",
           "pack_activation", "pack_conv_weight", "unpack_activation"]
