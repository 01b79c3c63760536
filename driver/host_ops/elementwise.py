"""Elementwise and broadcasting operators."""
from __future__ import annotations

import numpy as np

from ._operands import operand
from .errors import OperandError
from .opdef import binary, unary


def _unary(fn):
    return unary(fn).run


def _relu(x, attrs):
    return np.maximum(x, np.zeros((), x.dtype))


def _sigmoid(x, attrs):
    return 1.0 / (1.0 + np.exp(-x))


def _hard_sigmoid(x, attrs):
    return np.clip(attrs.get("alpha", 0.2) * x + attrs.get("beta", 0.5), 0, 1)


def _hard_swish(x, attrs):
    return x * np.clip(x / 6.0 + 0.5, 0, 1)


def _leaky_relu(x, attrs):
    return np.where(x >= 0, x, x * attrs.get("alpha", 0.01))


def _clip(inputs, attrs):
    x = inputs[0]
    lo = operand(inputs, 1, attrs, "min")
    hi = operand(inputs, 2, attrs, "max")
    out = x
    if lo is not None:
        out = np.maximum(out, np.asarray(lo, dtype=x.dtype))
    if hi is not None:
        out = np.minimum(out, np.asarray(hi, dtype=x.dtype))
    return [np.asarray(out, dtype=x.dtype)]


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        return np.trunc(np.true_divide(a, b)).astype(a.dtype)
    return np.true_divide(a, b)


def _binary(fn):
    return binary(fn).run


def _cast(inputs, attrs):
    return [inputs[0].astype(attrs["to"])]


def _identity(inputs, attrs):
    return [inputs[0]]


def _dropout(inputs, attrs):
    """Inference: the identity, the mask all ones. Training mode: each element kept with
    probability 1 - ratio and scaled by 1 / (1 - ratio), the mask saying which: uniform draws
    >= ratio from numpy's RandomState(seed), the draw the onnx reference makes, so a seeded
    model repeats the onnx node tests' masks (no other runtime's)."""
    x = np.asarray(inputs[0])
    training = bool(np.asarray(operand(inputs, 2, attrs, "training_mode", False)))
    ratio = float(np.asarray(operand(inputs, 1, attrs, "ratio", 0.5)))
    if not training or ratio == 0:
        return [x, np.ones(x.shape, dtype=bool)]
    if not 0 <= ratio < 1:
        raise OperandError(f"ratio {ratio} must be in [0, 1)")
    mask = np.random.RandomState(attrs.get("seed")).uniform(0.0, 1.0, x.shape) >= ratio
    return [(x * mask / (1 - ratio)).astype(x.dtype), mask]


OPS = {
    "Relu": _unary(_relu),
    "Sigmoid": _unary(_sigmoid),
    "HardSigmoid": _unary(_hard_sigmoid),
    "HardSwish": _unary(_hard_swish),
    "LeakyRelu": _unary(_leaky_relu),
    "Tanh": _unary(lambda x, a: np.tanh(x)),
    "Exp": _unary(lambda x, a: np.exp(x)),
    "Clip": _clip,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Cast": _cast,
    "Identity": _identity,
    "Dropout": _dropout,
}
