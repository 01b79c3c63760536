"""VdlaAdd: a weighted sum of two packed int8 tensors of one shape on the ALU (factors as
immediates or one per channel, plus a per-channel constant), with its epilogue."""
from __future__ import annotations

import numpy as np

from .packed import epilogue, wrap
from .semantics import VdlaSemantics


def add(inputs, attrs):
    a, b = inputs[0], inputs[1]
    packed = a.shape
    if a.ndim == 4:           # a matrix (M/B, K/L, B, L): its rows as pixels of one image
        a, b = (v.reshape(v.shape[0], v.shape[1], 1, 1, v.shape[2], v.shape[3]) for v in (a, b))
    if len(inputs) > 2:                       # per-channel multipliers (C/L, B, L), broadcast over pixels
        shape = (1, a.shape[1], 1, 1, 1, a.shape[5])
        ma = inputs[2][:, 0, :].astype(np.int64).reshape(shape)
        mb = inputs[3][:, 0, :].astype(np.int64).reshape(shape)
    else:
        ma, mb = attrs["ma"], attrs["mb"]
    total = wrap(a.astype(np.int64) * ma + b.astype(np.int64) * mb)
    if attrs.get("offset"):                   # a per-channel constant (the zero points' terms)
        total = wrap(total + inputs[4][:, 0, :].astype(np.int64).reshape(1, a.shape[1], 1, 1, 1, a.shape[5]))
    return [epilogue(total.reshape(a.shape[0], -1), attrs["epilogue"]).reshape(packed)]


SEMANTICS = VdlaSemantics("VdlaAdd", add)
