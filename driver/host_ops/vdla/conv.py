"""VdlaConv: a 2-d convolution (dense, or grouped inside channel blocks: depthwise, RegNet's and
ResNeXt's) of packed int8 activations on the GEMM core, with its ALU epilogue."""
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
    if layer.get("depthwise"):       # grouped inside blocks: output block o reads input block o
        cb, kh, kw, lo, li = w.shape
        n, _, oh, ow = win.shape[:4]
        blocks = win.reshape(n, cb, li, oh, ow, kh, kw)
        acc = np.einsum("nclhwij,cijol->ncohw", blocks, w.astype(np.int64)).reshape(n, cb * lo, oh, ow)
    else:
        ob, cb, kh, kw, lo, li = w.shape
        wn = w.transpose(0, 4, 1, 5, 2, 3).reshape(ob * lo, cb * li, kh, kw).astype(np.int64)
        acc = np.einsum("nchwij,ocij->nohw", win, wn)
    bias, scale, residual = extras(inputs, ep)
    if residual is not None:
        residual = unpack_act(residual)
    return [pack_act(epilogue(acc, ep, bias, scale, residual), batch, block)]


SEMANTICS = VdlaSemantics("VdlaConv", conv)
