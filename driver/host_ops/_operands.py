"""Reading an operand that ONNX passes either as an attribute or as a (constant) input."""
from __future__ import annotations

import numpy as np


def operand(inputs: list, index: int, attrs: dict, key: str, default=None):
    if key in attrs:
        return attrs[key]
    if len(inputs) > index and inputs[index] is not None:
        value = np.asarray(inputs[index])
        return value.tolist() if value.ndim else value.item()
    return default
