"""Winograd's minimal filtering F(m x m, 3x3) for 3x3 stride-1 convolutions in NCHWc.

Each m x m output tile comes from an (m + 2) x (m + 2) input patch d and the 3x3 filter g as
Y = A^T [(G g G^T) . (B^T d B)] A (Lavin & Gray, "Fast Algorithms for Convolutional Neural
Networks", 2016): F(2x2, 3x3) does 16 multiplies per tile and channel pair instead of 36 (2.25x
fewer), F(4x4, 3x3) 36 instead of 144 (4x fewer) for a 2.25x larger transformed filter and
transforms with larger coefficients (interpolation points 0, +-1, +-2). The matrices below are
the single statement of the transforms: the compiler's kernels (vdla.compiler.topi.winograd,
topi.gpu.winograd) build their expressions from them, and `conv_winograd_nchwc` is the op's
numpy semantics. Which transform a transformed filter U was made for is its first extent (the
patch edge, 4 or 6), so the op needs no attribute for it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class WinogradTransform:
    """F(tile x tile, 3x3): its input (bt), filter (g) and output (at) transforms."""
    tile: int
    bt: np.ndarray
    g: np.ndarray
    at: np.ndarray

    @property
    def alpha(self) -> int:
        """The input patch edge: tile + filter - 1."""
        return self.tile + 2

    def tiles(self, out_size: int) -> int:
        return (out_size + self.tile - 1) // self.tile

    def padded_size(self, n_tiles: int) -> int:
        """Input rows (or columns) that n_tiles output tiles read: patches of alpha at stride tile."""
        return self.tile * n_tiles + self.alpha - self.tile


F2 = WinogradTransform(
    2,
    np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64),
    np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], dtype=np.float64),
    np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64))
F4 = WinogradTransform(
    4,
    np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
              [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], dtype=np.float64),
    np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
              [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], dtype=np.float64),
    np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
             dtype=np.float64))
TRANSFORMS = {t.tile: t for t in (F2, F4)}


def transform_of(u_shape) -> WinogradTransform:
    """The transform a transformed filter of `u_shape` ([alpha, alpha, ...]) was made for."""
    for t in TRANSFORMS.values():
        if tuple(u_shape[:2]) == (t.alpha, t.alpha):
            return t
    raise ValueError(f"Winograd: a transformed filter starts [alpha, alpha] with alpha one of "
                     f"{[t.alpha for t in TRANSFORMS.values()]}, got {list(u_shape)}")


def transform_weight(weight: np.ndarray, cb: int, ob: int, tile: int = 2) -> np.ndarray:
    """OIHW 3x3 weights -> U = G g G^T of F(tile x tile, 3x3) as [alpha, alpha, O/ob, I/cb, cb,
    ob] (blocked like the NCHWc convolution's weights: input lane, then output lane innermost)."""
    if tile not in TRANSFORMS:
        raise ValueError(f"Winograd: no F({tile}x{tile}, 3x3) transform; tiles {sorted(TRANSFORMS)}")
    t = TRANSFORMS[tile]
    oc, c, kh, kw = weight.shape
    if (kh, kw) != (3, 3):
        raise ValueError(f"Winograd F({tile}x{tile}, 3x3): expected a 3x3 filter, got {kh}x{kw}")
    if oc % ob or c % cb:
        raise ValueError(f"Winograd F({tile}x{tile}, 3x3): {oc} output / {c} input channels are not "
                         f"multiples of the blocks {ob} / {cb}")
    u = np.einsum("ek,oikl,ul->euoi", t.g, weight.astype(np.float64), t.g)
    u = u.reshape(t.alpha, t.alpha, oc // ob, ob, c // cb, cb).transpose(0, 1, 2, 4, 5, 3)
    return np.ascontiguousarray(u.astype(weight.dtype))


def conv_winograd_nchwc(x: np.ndarray, u: np.ndarray, pads) -> np.ndarray:
    """x [N, C/cb, H, W, cb], u = transform_weight(...) -> [N, O/ob, OH, OW, ob] (stride 1)."""
    t = transform_of(u.shape)
    n, cbo, h, w, cb = x.shape
    pt, pl, pb, pr = pads
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    th, tw = t.tiles(oh), t.tiles(ow)
    d = np.zeros((n, cbo, t.padded_size(th), t.padded_size(tw), cb), np.float64)
    rows, cols = min(h, t.padded_size(th) - pt), min(w, t.padded_size(tw) - pl)
    d[:, :, pt:pt + rows, pl:pl + cols] = x[:, :, :rows, :cols]
    # alpha x alpha patches at stride tile: [n, c, th, tw, r, s, ci]
    sn, sc, sh, sw, si = d.strides
    patches = np.lib.stride_tricks.as_strided(
        d, (n, cbo, th, tw, t.alpha, t.alpha, cb), (sn, sc, t.tile * sh, t.tile * sw, sh, sw, si))
    v = np.einsum("er,nctyrsi,us->nctyeui", t.bt, patches, t.bt)
    m = np.einsum("nctyeui,euocij->notyeuj", v, u.astype(np.float64))
    y = np.einsum("ae,notyeuj,bu->notaybj", t.at, m, t.at)
    obo, ob = u.shape[2], u.shape[5]
    y = y.reshape(n, obo, t.tile * th, t.tile * tw, ob)[:, :, :oh, :ow]
    return np.ascontiguousarray(y.astype(x.dtype))


OPS = {
    "ConvWinogradNCHWc": lambda inputs, attrs: [conv_winograd_nchwc(inputs[0], inputs[1], attrs["pads"])],
}
