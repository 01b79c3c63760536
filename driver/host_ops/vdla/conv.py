"""VdlaConv: a 2-d convolution (dense; grouped inside channel blocks: depthwise, RegNet's and
ResNeXt's, a depthwise one by DEPTHWISE rows with its taps in lanes; or grouped by whole blocks:
one conv per group) of packed int8 activations on the GEMM core, with its ALU epilogue."""
from __future__ import annotations

import numpy as np

from .exact import int_matmul
from .packed import epilogue, extras, pack_act, table_operand, unpack_act, windows
from .semantics import VdlaSemantics


def conv(inputs, attrs):
    if "groups" in attrs["layer"]:   # groups of whole channel blocks: one conv per group
        return [_grouped(inputs, attrs)]
    x, w = inputs[0], inputs[1]
    layer, ep = attrs["layer"], attrs["epilogue"]
    batch, block = x.shape[4], x.shape[5]
    xn = unpack_act(x)
    win = windows(xn, layer["kh"], layer["kw"], layer["stride"], layer["pads"], layer.get("pad_value", 0))
    if layer.get("rows"):            # depthwise by DEPTHWISE rows: tile ky holds channel c's taps in row c
        kh = layer["kh"]             # (at stride 2 as many zero tiles follow)
        cb, _, lanes, _ = w.shape
        w = w[:, :kh]
        n, _, oh, ow = win.shape[:4]
        blocks = win.reshape(n, cb, lanes, oh, ow, kh, -1)
        taps = w[..., :blocks.shape[-1]].astype(np.int64)
        acc = np.einsum("nclhwij,cilj->nclhw", blocks, taps).reshape(n, cb * lanes, oh, ow)
    elif layer.get("depthwise"):     # grouped inside blocks: output block o reads input block o
        cb, kh, kw, lo, li = w.shape
        n, _, oh, ow = win.shape[:4]
        blocks = win.reshape(n, cb, li, oh, ow, kh, kw)
        acc = np.einsum("nclhwij,cijol->ncohw", blocks, w.astype(np.int64)).reshape(n, cb * lo, oh, ow)
    else:
        ob, cb, kh, kw, lo, li = w.shape
        wn = w.transpose(1, 5, 2, 3, 0, 4).reshape(cb * li * kh * kw, ob * lo)       # [c i j, o]
        peak = max(abs(int(xn.max())), abs(int(xn.min())), abs(int(layer.get("pad_value", 0))))
        acc = int_matmul(win.transpose(0, 2, 3, 1, 4, 5), wn, peak, k_axes=3).transpose(0, 3, 1, 2)
    bias, scale, residual, rscale = extras(inputs, ep)
    if residual is not None:
        residual = unpack_act(residual)
    return [pack_act(epilogue(acc, ep, bias, scale, residual, rscale, table_operand(inputs, ep)), batch, block)]


def _grouped(inputs, attrs):
    """Every buffer holds the groups one after another: input and output channel blocks (one
    batch block), weights, and the per-channel vectors."""
    groups = attrs["layer"]["groups"]
    one = {**attrs, "layer": attrs["layer"]["conv"]}
    ep = attrs["epilogue"]
    table = [inputs[-1]] if ep.get("table") else []       # one table for every group
    inputs = inputs[:len(inputs) - len(table)]
    images = {0, len(inputs) - 1} if ep.get("residual") else {0}     # (the others: by block)
    split = [np.split(a, groups, axis=1 if i in images else 0) for i, a in enumerate(inputs)] + [[t] * groups
                                                                                                 for t in table]
    outs = [conv([s[g] for s in split], one)[0] for g in range(groups)]
    return np.concatenate(outs, axis=1)


SEMANTICS = VdlaSemantics("VdlaConv", conv)
