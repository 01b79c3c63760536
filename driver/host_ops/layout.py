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
    group = w.shape[0] if attrs.get("depthwise") else attrs.get("groups", 1)
    y = conv(unpack(x), w, None, {**attrs, "group": group})
    return [pack(y.astype(x.dtype), w6.shape[-1])]


OPS = {
    "LayoutPack": lambda inputs, attrs: [pack(inputs[0], attrs["block"])],
    "LayoutUnpack": lambda inputs, attrs: [unpack(inputs[0])],
    "ConvNCHWc": _conv_nchwc,
}


def pack_weight_int8(w: np.ndarray, cb: int) -> np.ndarray:
    """OIHW int8 -> [O/16, I/cb, KH, KW, cb/4, 16, 4]: four input channels innermost, the
    operand layout of a 4-way uint8 x int8 dot product (VNNI vpdpbusd)."""
    o, i, kh, kw = w.shape
    return np.asarray(w.reshape(o // 16, 16, i // cb, cb // 4, 4, kh, kw).transpose(0, 2, 5, 6, 3, 1, 4),
                      order="C")


def unpack_weight_int8(w7: np.ndarray) -> np.ndarray:
    oo, io, kh, kw, cq, ob, four = w7.shape
    return np.asarray(w7.transpose(0, 5, 1, 4, 6, 2, 3), order="C").reshape(oo * ob, io * cq * four, kh, kw)


def _qconv_nchwc_int8(inputs, attrs):
    """int32 accumulators of a uint8 x int8 convolution whose padding holds `pad_value`."""
    x, w7 = inputs[0], inputs[1]
    xs = unpack(x).astype(np.int64)
    pads = attrs["pads"]
    xs = np.pad(xs, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])],
                constant_values=attrs.get("pad_value", 0))
    acc = conv(xs, unpack_weight_int8(w7).astype(np.int64), None,
               {**attrs, "pads": [0, 0, 0, 0], "group": 1}, acc_dtype=np.int64)
    return [pack(acc.astype(np.int32), w7.shape[5])]


def pack_matmul_weight_int8(w: np.ndarray) -> np.ndarray:
    """[K, N] int8 -> [N/16, K/4, 16, 4]: for each 16 columns, four consecutive k innermost (the
    vpdpbusd operand, as pack_weight_int8's)."""
    k, n = w.shape
    return np.ascontiguousarray(w.reshape(k // 4, 4, n // 16, 16).transpose(2, 0, 3, 1))


def _qmatmul_int8(inputs, attrs):
    """int32 accumulators [rows, N/16, 16] of uint8 [rows, K] x int8 panels [N/16, K/4, 16, 4]."""
    a, w4 = inputs[0], inputs[1]
    nb, kq, lanes, four = w4.shape
    weight = w4.transpose(1, 3, 0, 2).reshape(kq * four, nb * lanes).astype(np.int64)
    return [(a.astype(np.int64) @ weight).astype(np.int32).reshape(a.shape[0], nb, lanes)]


def _requantize_channels(inputs, attrs):
    """saturate(round((acc + correction) * multiplier) + zero_point), in float32 like the kernel."""
    acc, correction, multiplier = inputs[:3]
    scaled = (acc + correction).astype(np.float32) * multiplier.astype(np.float32)
    info = np.iinfo(attrs["dtype"])
    out = np.rint(scaled) + np.float32(attrs.get("zero_point", 0))
    return [np.clip(out, info.min, info.max).astype(attrs["dtype"])]


def _packed_pool(base: str):
    def run(inputs, attrs):
        from . import nn
        (y,) = nn.OPS[base]([unpack(inputs[0])], attrs)
        return [pack(y, inputs[0].shape[-1])]
    return run


POOLS = ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool")

OPS.update({f"{base}NCHWc": _packed_pool(base) for base in POOLS})
OPS.update({
    "QConvNCHWcInt8": _qconv_nchwc_int8,
    "QMatMulInt8": _qmatmul_int8,
    "RequantizeChannels": _requantize_channels,
})
