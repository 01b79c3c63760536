"""VdlaUpsample: a nearest upsampling of packed int8 activations by whole factors (YOLO's 2x),
each output pixel a copy of the input pixel it lies in. Codes keep their grid."""
from __future__ import annotations

import numpy as np

from .semantics import VdlaSemantics


def upsample(inputs, attrs):
    """attrs["layer"]: fh, fw, the factors of the height and width (SPEC §7 layout: axes 2, 3)."""
    layer = attrs["layer"]
    return [np.ascontiguousarray(inputs[0].repeat(layer["fh"], axis=2).repeat(layer["fw"], axis=3))]


SEMANTICS = VdlaSemantics("VdlaUpsample", upsample)
