"""Data movement of packed int8 activations (SPEC §7: (N/B, C/L, H, W, B, L)) between accelerator
kernels, done by the host on the codes themselves: Concat and Split along whole channel blocks,
and a nearest Resize as a gather of pixels. Codes keep their grid (a channel's scale goes with
it), so no dequantize and quantize round trip is needed around them."""
from __future__ import annotations

import numpy as np

from .semantics import VdlaSemantics


def _concat(inputs, attrs):
    """Channel blocks of the inputs one after another (each input but the last a whole number
    of blocks, so the channels line up)."""
    return [np.concatenate(inputs, axis=1)]


def _split(inputs, attrs):
    """attrs["blocks"]: the channel blocks of each output, in order."""
    ends = np.cumsum(attrs["blocks"])[:-1]
    return [np.ascontiguousarray(part) for part in np.split(inputs[0], ends, axis=1)]


def _gather_pixels(inputs, attrs):
    """inputs[1] (OH, OW) int: the input pixel (flat h * W + w) each output pixel copies."""
    x, pixels = inputs[0], np.asarray(inputs[1])
    nb, cb, h, w, b, lanes = x.shape
    flat = x.reshape(nb, cb, h * w, b, lanes)[:, :, pixels.ravel()]
    return [np.ascontiguousarray(flat.reshape(nb, cb, *pixels.shape, b, lanes))]


CONCAT = VdlaSemantics("VdlaConcat", _concat, kernel=False)
SPLIT = VdlaSemantics("VdlaSplit", _split, kernel=False)
GATHER_PIXELS = VdlaSemantics("VdlaGatherPixels", _gather_pixels, kernel=False)
