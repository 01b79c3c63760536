"""Winograd's minimal filtering F(2x2, 3x3) for 3x3 stride-1 convolutions in NCHWc.

Each 2x2 output tile comes from a 4x4 input patch d and the 3x3 filter g as
Y = A^T [(G g G^T) . (B^T d B)] A (Lavin & Gray, "Fast Algorithms for Convolutional Neural
Networks", 2016): 16 multiplies per tile and channel pair instead of 36. The matrices below
are the single statement of the transforms: the compiler's kernel (vdla.compiler.topi.winograd)
builds its expressions from them, and `conv_winograd_nchwc` is the op's numpy semantics.
"""
from __future__ import annotations

import numpy as np

TILE, ALPHA = 2, 4    # output tile edge; input patch edge = tile + filter - 1

BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64)
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], dtype=np.float64)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64)


def transform_weight(weight: np.ndarray, cb: int, ob: int) -> np.ndarray:
    """OIHW 3x3 weights -> U = G g G^T as [4, 4, O/ob, I/cb, cb, ob] (blocked like the NCHWc
    convolution's weights: input lane, then output lane innermost)."""
    oc, c, kh, kw = weight.shape
    if (kh, kw) != (3, 3):
        raise ValueError(f"Winograd F(2x2, 3x3): expected a 3x3 filter, got {kh}x{kw}")
    if oc % ob or c % cb:
        raise ValueError(f"Winograd F(2x2, 3x3): {oc} output / {c} input channels are not "
                         f"multiples of the blocks {ob} / {cb}")
    u = np.einsum("ek,oikl,ul->euoi", G, weight.astype(np.float64), G)
    u = u.reshape(ALPHA, ALPHA, oc // ob, ob, c // cb, cb).transpose(0, 1, 2, 4, 5, 3)
    return np.ascontiguousarray(u.astype(weight.dtype))


def tiles(out_size: int) -> int:
    return (out_size + TILE - 1) // TILE


def padded_size(n_tiles: int) -> int:
    """Input rows (or columns) that n_tiles output tiles read: patches of ALPHA at stride TILE."""
    return TILE * n_tiles + ALPHA - TILE


def conv_winograd_nchwc(x: np.ndarray, u: np.ndarray, pads) -> np.ndarray:
    """x [N, C/cb, H, W, cb], u = transform_weight(...) -> [N, O/ob, OH, OW, ob] (stride 1)."""
    n, cbo, h, w, cb = x.shape
    pt, pl, pb, pr = pads
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    th, tw = tiles(oh), tiles(ow)
    d = np.zeros((n, cbo, padded_size(th), padded_size(tw), cb), np.float64)
    rows, cols = min(h, padded_size(th) - pt), min(w, padded_size(tw) - pl)
    d[:, :, pt:pt + rows, pl:pl + cols] = x[:, :, :rows, :cols]
    # ALPHA x ALPHA patches at stride TILE: [n, c, th, tw, r, s, ci]
    sn, sc, sh, sw, si = d.strides
    patches = np.lib.stride_tricks.as_strided(
        d, (n, cbo, th, tw, ALPHA, ALPHA, cb), (sn, sc, TILE * sh, TILE * sw, sh, sw, si))
    v = np.einsum("er,nctyrsi,us->nctyeui", BT, patches, BT)
    m = np.einsum("nctyeui,euocij->notyeuj", v, u.astype(np.float64))
    y = np.einsum("ae,notyeuj,bu->notaybj", AT, m, AT)
    obo, ob = u.shape[2], u.shape[5]
    y = y.reshape(n, obo, TILE * th, TILE * tw, ob)[:, :, :oh, :ow]
    return np.ascontiguousarray(y.astype(x.dtype))


OPS = {
    "ConvWinogradNCHWc": lambda inputs, attrs: [conv_winograd_nchwc(inputs[0], inputs[1], attrs["pads"])],
}
