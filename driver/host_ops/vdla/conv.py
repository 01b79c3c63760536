"""VdlaConv: a 2-d convolution (dense or depthwise) of packed int8 activations on the GEMM core,
with its ALU epilogue."""
from __future__ import annotations

import numpy as np

from .packed import epilogue, extras, pack_act, unpack_act, windows
from .semantics import VdlaSemantics


def conv(inputs, attrs):
    x, w = inputs[0], inputs[1]
    layer, ep = attrs["layer"], attrs["epilogue"]
    batch, block = x.shape[4], x.shape[5]
    xn = unpack_act(x)
    win = windows(xn, layer["kh"], layer["kw"], layer["stride"], layer["pads"], layer.get("pad_value", 0))
    if layer.get("depthwise"):
        cb, kh, kw, lo, li = w.shape
        diag = w[:, :, :, np.arange(lo), np.arange(li)]                  # (C/L, KH, KW, L)
        wd = diag.transpose(0, 3, 1, 2).reshape(cb * lo, kh, kw).astype(np.int64)
        acc = np.einsum("nchwij,cij->nchw", win, wd)
    else:
        ob, cb, kh, kw, lo, li = w.shape
        wn = w.transpose(0, 4, 1, 5, 2, 3).reshape(ob * lo, cb * li, kh, kw).astype(np.int64)
        acc = np.einsum("nchwij,ocij->nohw", win, wn)
    bias, scale, residual = extras(inputs, ep)
    if residual is not None:
        residual = unpack_act(residual)
    return [pack_act(epilogue(acc, ep, bias, scale, residual), batch, block)]


SEMANTICS = VdlaSemantics("VdlaConv", conv)
