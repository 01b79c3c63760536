"""Elementwise math, comparison and logic operators of the default ONNX domain (the activations
are in nn.py and elementwise.py when older): one OpDef each."""
from __future__ import annotations

import numpy as np

from .opdef import OpDef, binary, unary

DEFS: dict[str, OpDef] = {
    "Abs": unary(lambda x, a: np.abs(x)),
    "Neg": unary(lambda x, a: np.negative(x)),
    "Sqrt": unary(lambda x, a: np.sqrt(x)),
    "Reciprocal": unary(lambda x, a: np.reciprocal(x)),
    "Floor": unary(lambda x, a: np.floor(x)),
    "Ceil": unary(lambda x, a: np.ceil(x)),
    "Log": unary(lambda x, a: np.log(x)),
    "Sign": unary(lambda x, a: np.sign(x)),
    "Equal": binary(np.equal, "bool"),
    "Less": binary(np.less, "bool"),
    "Greater": binary(np.greater, "bool"),
    "Not": unary(lambda x, a: np.logical_not(x)),
}
