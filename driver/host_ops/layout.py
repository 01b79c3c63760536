"""Blocked channel layout (NCHWc): [N, C, H, W] <-> [N, C/b, H, W, b], and convolution on it.

The compiler packs convolution chains into this layout because a block of b channels is one
vector register; these are the numpy semantics of the ops that layout introduces.
"""
from __future__ import annotations

import numpy as np

from .nn import conv


def pack(x: np.ndarray, block: int) -> np.ndarray:
    n, c, h, w = x.shape
    return np.asarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2), order="C")


def unpack(x: np.ndarray) -> np.ndarray:
    n, cb, h, w, b = x.shape
    return np.asarray(x.transpose(0, 1, 4, 2, 3), order="C").reshape(n, cb * b, h, w)


def pack_weight(w: np.ndarray, cb: int, ob: int, depthwise: bool) -> np.ndarray:
    """OIHW -> [O/ob, I/cb, KH, KW, cb, ob], or [C/b, 1, KH, KW, 1, b] for depthwise."""
    o, i, kh, kw = w.shape
    if depthwise:
        return np.asarray(w.reshape(o // ob, ob, kh, kw).transpose(0, 2, 3, 1), order="C") \
            .reshape(o // ob, 1, kh, kw, 1, ob)
    return np.asarray(w.reshape(o // ob, ob, i // cb, cb, kh, kw).transpose(0, 2, 4, 5, 3, 1), order="C")


def unpack_weight(w6: np.ndarray) -> np.ndarray:
    oo, io, kh, kw, cb, ob = w6.shape
    return np.asarray(w6.transpose(0, 5, 1, 4, 2, 3), order="C").reshape(oo * ob, io * cb, kh, kw)


def _conv_nchwc(inputs, attrs):
    x, w6 = inputs[0], inputs[1]
    w = unpack_weight(w6)
    group = w.shape[0] if attrs.get("depthwise") else 1
    y = conv(unpack(x), w, None, {**attrs, "group": group})
    return [pack(y.astype(x.dtype), w6.shape[-1])]


OPS = {
    "LayoutPack": lambda inputs, attrs: [pack(inputs[0], attrs["block"])],
    "LayoutUnpack": lambda inputs, attrs: [unpack(inputs[0])],
    "ConvNCHWc": _conv_nchwc,
}
