"""The GEMM-shaped VDLA operators as tensor expressions (int8 x int8 -> int32).

Layouts (SPEC §7, B = BATCH, L = BLOCK): activations (N/B, C/L, H, W, B, L), conv weights
(O/L, C/L, KH, KW, L, L), depthwise weights (C/L, KH, KW, L, L) holding each channel's
taps on the diagonal of its block, depthwise weights by rows (C/L, KH, L, L) holding channel
c's taps of kernel row ky in row c of tile ky, lanes 0..KW-1 (DEPTHWISE, vdla.hw.depthwise;
at stride 2, KH zero tiles follow),
dense weights (N/L, K/L, L, L).

`out_hw` lets a schedule compute a taller/wider output than the layer has (tiles that do
not divide the image): the extra rows and columns read padding and are never stored.
`pad_value` is 0 or -128: the int8 code of a real zero when the input is quantized with zero
point -128 (the DMA writes either, LOAD pad_min).
"""
from __future__ import annotations

from vdla.hw.depthwise import TAPS as DEPTHWISE_TAPS

from ... import te
from ...intrin.vdla import ROW_STRIDES
from ..transform import pad


def _i32(v):
    return te.cast("int32", v)


def padded_window(x, kh, kw, strides, pads, out_hw, name, pad_value=0):
    """A kh x kw window over the activation x: -> (x padded, as deep as an `out_hw` output
    reaches (None: the layer's own output size), that output size)."""
    _, _, h, w, _, _ = x.shape
    sh, sw = strides
    pt, pl, pb, pr = pads
    oh, ow = out_hw = out_hw or conv_out_hw(h, w, kh, kw, strides, pads)
    # rows/columns the over-computed output reaches beyond the bottom/right padding
    extra_h = max(0, (oh - 1) * sh + kh - (h + pt + pb))
    extra_w = max(0, (ow - 1) * sw + kw - (w + pl + pr))
    padded = pad(x, [0, 0, pt, pl, 0, 0], [0, 0, pb + extra_h, pr + extra_w, 0, 0], pad_value, name=name)
    return padded, out_hw


def _taps(kh, kw):
    return te.reduce_axis((0, kh), "ky"), te.reduce_axis((0, kw), "kx")


def conv_out_hw(h, w, kh, kw, strides, pads):
    sh, sw = strides
    pt, pl, pb, pr = pads
    return (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1


def conv2d(x, w, strides=(1, 1), pads=(0, 0, 0, 0), out_hw=None, name="conv", pad_value=0):
    nb, cb, _, _, batch, block = x.shape
    ob, cb2, kh, kw, bo, bi = w.shape
    if cb2 != cb or bi != block or bo != block:
        raise ValueError(f"vdla conv2d: weight {list(w.shape)} does not fit input {list(x.shape)}")
    xp, out_hw = padded_window(x, kh, kw, strides, pads, out_hw, name + ".pad", pad_value)
    sh, sw = strides
    ic = te.reduce_axis((0, cb), "ic")
    ky, kx = _taps(kh, kw)
    k = te.reduce_axis((0, block), "k")
    return te.compute(
        (nb, ob, out_hw[0], out_hw[1], batch, block),
        lambda n, o, i, j, b, c: te.sum(
            _i32(xp[n, ic.var, i * sh + ky.var, j * sw + kx.var, b, k.var]) * _i32(w[o, ic.var, ky.var, kx.var, c, k.var]),
            axis=[ic, ky, kx, k]), name=name)


def depthwise_conv2d(x, w, strides=(1, 1), pads=(0, 0, 0, 0), out_hw=None, name="dwconv", pad_value=0):
    """Channel block o of the output reads only channel block o of the input; the GEMM
    multiplies by a diagonal weight block (one useful MAC in BLOCK, but one micro-op per tap
    and pixel, where the ALU would need a multiply and an add of two cycles each)."""
    nb, cb, _, _, batch, block = x.shape
    cb2, kh, kw, bo, bi = w.shape
    if cb2 != cb or bo != block or bi != block:
        raise ValueError(f"vdla depthwise_conv2d: weight {list(w.shape)} does not fit input {list(x.shape)}")
    xp, out_hw = padded_window(x, kh, kw, strides, pads, out_hw, name + ".pad", pad_value)
    sh, sw = strides
    ky, kx = _taps(kh, kw)
    k = te.reduce_axis((0, block), "k")
    return te.compute(
        (nb, cb, out_hw[0], out_hw[1], batch, block),
        lambda n, o, i, j, b, c: te.sum(
            _i32(xp[n, o, i * sh + ky.var, j * sw + kx.var, b, k.var]) * _i32(w[o, ky.var, kx.var, c, k.var]),
            axis=[ky, kx, k]), name=name)


def depthwise_rows(x, w, strides=(1, 1), pads=(0, 0, 0, 0), out_hw=None, name="dwconv", pad_value=0, kh=None):
    """A depthwise conv as DEPTHWISE rows: out[.., c] = sum over (ky, kx) of the input's
    channel c at (i*sh + ky, j*sw + kx) times tile ky's tap kx of channel c, for the first `kh`
    tiles of w (all of them by default).

    A row slides its window one pixel per micro-op. At stride 2 it slides over every pixel and
    every other window is one no output wants: that micro-op reads a zero tile instead
    (tile ky + kh, which w holds after the kernel rows: ConvLayer.row_tiles) and adds its zeros
    to an output of the row (codegen's window rows say which), two micro-ops per output instead
    of the diagonal GEMM's three per kernel row."""
    nb, cb, _, _, batch, block = x.shape
    cb2, tiles, bo, bi = w.shape
    kh = tiles if kh is None else kh
    if cb2 != cb or bo != block or bi != block or kh > tiles:
        raise ValueError(f"vdla depthwise_rows: weight {list(w.shape)} does not fit input {list(x.shape)}")
    if strides[1] not in ROW_STRIDES:
        raise ValueError(f"vdla depthwise_rows: a row slides one pixel at a time, so its stride is one of "
                         f"{ROW_STRIDES}, not {strides[1]}")
    kw = DEPTHWISE_TAPS
    xp, out_hw = padded_window(x, kh, kw, strides, pads, out_hw, name + ".pad", pad_value)
    sh, sw = strides
    ky, kx = _taps(kh, kw)
    return te.compute(
        (nb, cb, out_hw[0], out_hw[1], batch, block),
        lambda n, o, i, j, b, c: te.sum(
            _i32(xp[n, o, i * sh + ky.var, j * sw + kx.var, b, c]) * _i32(w[o, ky.var, c, kx.var]), axis=[ky, kx]),
        name=name)


def dense(x, w, name="dense"):
    """x (M/B, K/L, B, L) . w (N/L, K/L, L, L) -> (M/B, N/L, B, L) int32. With a leading group
    axis on both, x (G, M/B, ...) and w (G, N/L, ...), G products: -> (G, M/B, N/L, B, L)."""
    *groups, mb, kb, batch, block = x.shape
    *wgroups, nb, kb2, bo, bi = w.shape
    if kb2 != kb or bi != block or bo != block or groups != wgroups:
        raise ValueError(f"vdla dense: weight {list(w.shape)} does not fit input {list(x.shape)}")
    r = te.reduce_axis((0, kb), "kb")
    k = te.reduce_axis((0, block), "k")
    if groups:
        return te.compute((*groups, mb, nb, batch, block),
                          lambda g, m, n, b, c: te.sum(
                              _i32(x[g, m, r.var, b, k.var]) * _i32(w[g, n, r.var, c, k.var]), axis=[r, k]),
                          name=name)
    return te.compute((mb, nb, batch, block),
                      lambda m, n, b, c: te.sum(_i32(x[m, r.var, b, k.var]) * _i32(w[n, r.var, c, k.var]),
                                                axis=[r, k]), name=name)
