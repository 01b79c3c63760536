"""VdlaMul: the product of two packed int8 tensors on the ALU, the second of the same shape or
one value per channel broadcast over the pixels (a squeeze-excitation gate), requantized by a
per-channel fixed-point factor: y = clip((((a - za) * (b - zb) * m[c] >> P) + 2^(S-1) >> S) + zy). The
floor shift P lets the factor keep 15 bits where the rounding constant 2^(S-1) must stay an ALU
immediate."""
from __future__ import annotations

import numpy as np

from .packed import wrap
from .semantics import VdlaSemantics


def mul(inputs, attrs):
    """inputs: a (N/B, C/L, H, W, B, L), b (the same, or H = W = 1), m (C/L, B, L) int32;
    attrs["layer"]: za, zb, zy (zero points), pre_shift, shift, lo, hi."""
    a, b, m = inputs
    attrs = attrs["layer"]
    cb, lanes = a.shape[1], a.shape[5]
    product = wrap((a.astype(np.int64) - attrs["za"]) * (b.astype(np.int64) - attrs["zb"]))
    scaled = wrap(product * m[:, 0, :].astype(np.int64).reshape(1, cb, 1, 1, 1, lanes))
    scaled = scaled >> attrs["pre_shift"]
    shift = attrs["shift"]
    if shift:
        scaled = wrap(scaled + (1 << (shift - 1))) >> shift
    y = wrap(scaled + attrs["zy"])
    return [np.clip(y, attrs["lo"], attrs["hi"]).astype(np.int8)]


SEMANTICS = VdlaSemantics("VdlaMul", mul)
