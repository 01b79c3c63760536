"""numpy oracles for the compiled VDLA kernels, in plain NCHW / OIHW / (M, K) terms, written
from the SPEC's semantics: int32 accumulation that wraps, ALU ops on int32 (MUL keeps the
low 32 bits, SHR floors), the STORE's int8 truncation. run_conv / run_dense (the code under
test) come from vdla.compiler.topi.vdla."""
import numpy as np

from vdla.compiler.topi.vdla import Epilogue, run_conv, run_dense, run_pool  # noqa: F401  (re-exported for tests)


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


def epilogue(acc, ep, bias=None, residual=None, channel_axis=1, scale=None, rscale=None, table=None):
    """acc int32 (any layout with channels on channel_axis) -> the int8 the STORE writes. On the
    write-back requantizer (ep.requantizer): `bias` and the multipliers `scale` are its registers,
    (acc [* mul] [+ residual * rscale] + bias) * scale, rounded half up >> shift, + zero, clipped
    [, then the table's entry for that code]."""
    x = wrap32(acc)
    shape = [1] * x.ndim
    shape[channel_axis] = -1
    if ep.bias:
        x = wrap32(x + bias.reshape(shape))
    if ep.pre_shift:
        x = x >> ep.pre_shift
    if ep.scale:
        x = wrap32(x * scale.astype(np.int64).reshape(shape))
    if ep.mul is not None:
        x = wrap32(x * ep.mul)
    scaled = ep.residual and ep.residual_scale       # a residual on another grid: before the shift
    if scaled:
        x = wrap32(x + wrap32(residual.astype(np.int64) * rscale.astype(np.int64).reshape(shape)))
    if ep.requantizer:
        t = (x + bias.astype(np.int64).reshape(shape)) * scale.astype(np.int64).reshape(shape)
        if ep.shift:
            t = (t + (1 << (ep.shift - 1))) >> ep.shift
        y = np.clip(t + ep.zero, ep.lo, ep.hi)
        return (np.asarray(table, np.int8)[y + 128] if ep.table else y).astype(np.int8)
    if ep.shift:
        if ep.round:
            x = wrap32(x + (1 << (ep.shift - 1)))
        x = x >> ep.shift
    if ep.residual and not scaled:
        x = wrap32(x + residual.astype(np.int64))
    if ep.lo is not None:
        x = np.maximum(x, ep.lo)
    if ep.hi is not None:
        x = np.minimum(x, ep.hi)
    if ep.table:     # ALU LUT: saturate to int8, then entry (code + 128)
        x = np.asarray(table, np.int8)[np.clip(x, -128, 127) + 128]
    return x.astype(np.int32).astype(np.int8)


def conv_reference(x, w, stride=1, pad=1, ep=None, bias=None, residual=None, depthwise=False, scale=None,
                   rscale=None, table=None):
    pads = pad if isinstance(pad, tuple) else (pad,) * 4
    acc = depthwise_nchw(x, w, stride, pads) if depthwise else conv_nchw(x, w, stride, pads)
    return epilogue(acc, ep or Epilogue(), bias, residual, scale=scale, rscale=rscale, table=table)


def dense_reference(a, b, ep=None, bias=None, residual=None, scale=None, table=None):
    return epilogue(wrap32(a.astype(np.int64) @ b.astype(np.int64)), ep or Epilogue(), bias, residual, scale=scale,
                    table=table)


def pool_reference(x, kernel, stride, pad, mode, ep=None):
    """ONNX max pooling (padding never wins), or the zero-padded window sum through the epilogue."""
    pads = pad if isinstance(pad, tuple) else (pad,) * 4
    pt, pl, pb, pr = pads
    fill = np.iinfo(np.int64).min if mode == "max" else 0
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, kernel, axis=(2, 3))[:, :, ::stride, ::stride]
    if mode == "max":
        acc = win.max(axis=(-1, -2))
    else:
        acc = win.sum(axis=(-1, -2))
    return epilogue(acc, ep or Epilogue(lo=None, hi=None), None, None)
