"""Activation functions of the default ONNX domain that have a whole record (the older Relu,
Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, Clip are in elementwise.py, Softmax in nn.py):
one OpDef each."""
from __future__ import annotations

import numpy as np

from .axes import normalize_axis
from .errors import OperandError
from .math_ops import _erf64
from .opdef import OpDef, broadcast_shape, dtype_name, same_as_input, unary


def _wide(x):
    """float16 computes in float32 (as onnxruntime does): float16 intermediates (exp, the
    products) would lose digits the result keeps."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def activation(fn) -> OpDef:
    """An elementwise activation `fn(x, attrs)` on the (widened) input, cast back to its dtype."""
    def f(x, attrs):
        with np.errstate(over="ignore"):  # exp overflows to inf on the way to a finite limit
            return fn(_wide(x), attrs)
    return unary(f)


def _gelu(x, attrs):
    if attrs["approximate"] == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf64(x.astype(np.float64) / np.sqrt(2)))


def _gelu_unsupported(attrs):
    if attrs["approximate"] not in ("none", "tanh"):
        return f"approximate={attrs['approximate']!r}; the ONNX values are 'none' and 'tanh'"
    return None


def _softplus(x):
    return np.logaddexp(np.zeros((), x.dtype), x)  # log(1 + e^x) without overflowing e^x


def _shrink(x, attrs):
    lambd, bias = attrs["lambd"], attrs["bias"]
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))


def _prelu(inputs, attrs):
    x, slope = inputs
    return [np.asarray(np.where(x < 0, slope * x, x), dtype=x.dtype)]


def _prelu_types(inputs, attrs):
    x, slope = inputs
    # the slope broadcasts to X, never X to the slope (unidirectional broadcasting)
    if broadcast_shape(x.shape, slope.shape) != tuple(x.shape):
        raise OperandError(f"slope of shape {list(slope.shape)} does not broadcast to the input's shape "
                           f"{list(x.shape)} (unidirectional: the result has X's shape)")
    return [(tuple(x.shape), dtype_name(x))]


def along_axis(fn) -> OpDef:
    """An op over one axis (`fn(x, axis)`, x widened); with `coerce_2d` (opset < 13) over the
    input flattened to 2-D at the axis: all the trailing dims together."""
    def run(inputs, attrs):
        x = inputs[0]
        axis = normalize_axis(attrs["axis"], x.ndim) if x.ndim else 0
        wide = _wide(x)
        if attrs.get("coerce_2d", False):
            flat = wide.reshape(int(np.prod(x.shape[:axis])), -1)
            return [fn(flat, 1).reshape(x.shape).astype(x.dtype)]
        return [fn(wide, axis).astype(x.dtype)]

    def types(inputs, attrs):
        normalize_axis(attrs["axis"], inputs[0].ndim)
        return same_as_input()(inputs, attrs)
    return OpDef(run, types)


def _log_softmax(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _hardmax(x, axis):
    """1 at the first largest value along the axis, 0 elsewhere."""
    first = np.expand_dims(np.argmax(x, axis=axis), axis)
    return (np.arange(x.shape[axis]).reshape([-1 if k == axis else 1 for k in range(x.ndim)]) == first)


DEFS: dict[str, OpDef] = {
    "Gelu": OpDef(activation(_gelu).run, same_as_input(), unsupported=_gelu_unsupported),
    "Elu": activation(lambda x, a: np.where(x < 0, a["alpha"] * np.expm1(x), x)),
    "Selu": activation(lambda x, a: a["gamma"] * np.where(x > 0, x, a["alpha"] * np.expm1(x))),
    "Celu": activation(lambda x, a: np.maximum(0, x) + np.minimum(0, a["alpha"] * np.expm1(x / a["alpha"]))),
    "Mish": activation(lambda x, a: x * np.tanh(_softplus(x))),
    "Softplus": activation(lambda x, a: _softplus(x)),
    "Softsign": activation(lambda x, a: x / (1 + np.abs(x))),
    "ThresholdedRelu": activation(lambda x, a: np.where(x > a["alpha"], x, 0)),
    "Shrink": activation(_shrink),
    "Swish": activation(lambda x, a: x / (1 + np.exp(-a["alpha"] * x))),
    "PRelu": OpDef(_prelu, _prelu_types),
    "LogSoftmax": along_axis(_log_softmax),
    "Hardmax": along_axis(_hardmax),
}
