"""Elementwise math, comparison and logic operators of the default ONNX domain (the activations
are in activations.py, nn.py and elementwise.py when older): one OpDef each."""
from __future__ import annotations

import functools
import math

import numpy as np

from .errors import OperandError
from .opdef import OpDef, binary, broadcast, dtype_name, unary
from .shape_ops import ONNX_DTYPES

# erf has no numpy ufunc; math.erf on float64 is correctly rounded to every narrower float.
_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _quiet(fn):
    """`fn` without numpy's warnings: a NaN from a value outside the domain (Acosh(0.5), Log(-1))
    or an integer Mod by zero is the op's answer, not a fault of the host."""
    def run(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    return run


def predicate(fn) -> OpDef:
    """A bool-valued elementwise op of one input: `fn(x, attrs)`."""
    return OpDef(lambda inputs, attrs: [np.asarray(fn(inputs[0], attrs), dtype=bool)],
                 lambda inputs, attrs: [(tuple(inputs[0].shape), "bool")])


def variadic(fn) -> OpDef:
    """An op of one or more broadcasting inputs, folded left with the binary ufunc `fn`; typed
    like the first input."""
    def run(inputs, attrs):
        out = functools.reduce(fn, inputs)
        return [np.asarray(np.broadcast_to(out, np.broadcast_shapes(*[x.shape for x in inputs])),
                           dtype=inputs[0].dtype)]
    return OpDef(run, broadcast())


def _mean(inputs, attrs):
    total = functools.reduce(np.add, inputs)
    shape = np.broadcast_shapes(*[x.shape for x in inputs])
    return [np.asarray(np.broadcast_to(total / inputs[0].dtype.type(len(inputs)), shape), dtype=inputs[0].dtype)]


def _pow(a, b):
    """The base's dtype whatever the exponent's (Pow's T and T1 differ)."""
    if np.issubdtype(a.dtype, np.floating):
        return np.power(a, b.astype(a.dtype))
    if np.issubdtype(b.dtype, np.floating):  # an integer raised to a float power truncates
        return np.power(a.astype(np.float64), b.astype(np.float64))
    # integer ** integer exactly (wrapping like the C loop); a negative power of |a| > 1 is a
    # fraction that truncates to 0, of 1 is 1 and of -1 is +-1
    b = b.astype(np.int64)
    whole = np.power(a, np.maximum(b, 0).astype(a.dtype))
    unit = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0)).astype(a.dtype)
    return np.where(b < 0, unit, whole)


def _mod(inputs, attrs):
    a, b = inputs
    # fmod=1: the sign of the dividend (C fmod); fmod=0: the sign of the divisor (Python's %),
    # which onnxruntime also computes for floats
    fn = np.fmod if attrs["fmod"] else np.mod
    with np.errstate(all="ignore"):
        return [np.asarray(fn(a, b), dtype=a.dtype)]


def _mod_unsupported(attrs):
    if attrs["fmod"] not in (0, 1):
        return f"fmod={attrs['fmod']}; the ONNX values are 0 and 1"
    return None


def _bit_shift(inputs, attrs):
    """Shift counts outside 0..bits-1 (negative, or the width or more) give what the sign
    extension alone gives: 0, or -1 for a right shift of a negative value."""
    x, y = inputs
    bits = x.dtype.itemsize * 8
    count = y.astype(np.int64) if y.dtype != np.uint64 else np.minimum(y, bits).astype(np.int64)
    valid = (count >= 0) & (count < bits)
    safe = np.where(valid, count, 0).astype(x.dtype)
    if attrs["direction"] == "LEFT":
        out = np.where(valid, np.left_shift(x, safe), 0)
    else:
        out = np.where(valid, np.right_shift(x, safe), np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0)
    return [np.asarray(out, dtype=x.dtype)]


def _bit_shift_unsupported(attrs):
    if attrs.get("direction") not in ("LEFT", "RIGHT"):
        return f"direction={attrs.get('direction')!r}; the ONNX values are 'LEFT' and 'RIGHT'"
    return None


def _where(inputs, attrs):
    cond, a, b = inputs
    return [np.asarray(np.where(cond, a, b), dtype=a.dtype)]


def _is_inf(x, attrs):
    return (np.isposinf(x) & bool(attrs["detect_positive"])) | (np.isneginf(x) & bool(attrs["detect_negative"]))


def _cast_like(inputs, attrs):
    with np.errstate(all="ignore"):
        return [inputs[0].astype(inputs[1].dtype)]


def _bit_cast_types(inputs, attrs):
    x, to = inputs[0], ONNX_DTYPES[attrs["to"]]
    if np.dtype(x.dtype).itemsize != np.dtype(to).itemsize:
        raise OperandError(f"to={attrs['to']} ({to}) is {np.dtype(to).itemsize * 8} bits wide and the input "
                           f"({dtype_name(x)}) {np.dtype(x.dtype).itemsize * 8}: BitCast needs equal widths")
    return [(tuple(x.shape), to)]


def _bit_cast(inputs, attrs):
    x = inputs[0]
    (_, to), = _bit_cast_types(inputs, attrs)
    # the bytes are read as ONNX lays them out, little endian, whatever the host's order
    little = np.array(x, dtype=x.dtype.newbyteorder("<"), order="C")
    out = little.view(np.dtype(to).newbyteorder("<")).astype(to)
    # a byte other than 0 or 1 is no numpy bool: it reads as true, stored canonically
    return [out != 0 if to == "bool" else out]


def _bit_cast_unsupported(attrs):
    if attrs.get("to") not in ONNX_DTYPES:
        return (f"to={attrs.get('to')} (an ONNX TensorProto type); supported: "
                f"{', '.join(f'{code} ({name})' for code, name in ONNX_DTYPES.items())}")
    return None


DEFS: dict[str, OpDef] = {
    "Abs": unary(lambda x, a: np.abs(x)),
    "Neg": unary(lambda x, a: np.negative(x)),
    "Sqrt": unary(_quiet(lambda x, a: np.sqrt(x))),
    "Reciprocal": unary(_quiet(lambda x, a: np.reciprocal(x))),
    "Floor": unary(lambda x, a: np.floor(x)),
    "Ceil": unary(lambda x, a: np.ceil(x)),
    "Log": unary(_quiet(lambda x, a: np.log(x))),
    "Sign": unary(lambda x, a: np.sign(x)),
    "Erf": unary(lambda x, a: _erf64(x.astype(np.float64)) if x.size else x),
    "Round": unary(lambda x, a: np.round(x)),  # numpy rounds ties to even, as ONNX does
    "Sin": unary(lambda x, a: np.sin(x)),
    "Cos": unary(lambda x, a: np.cos(x)),
    "Tan": unary(lambda x, a: np.tan(x)),
    "Asin": unary(_quiet(lambda x, a: np.arcsin(x))),
    "Acos": unary(_quiet(lambda x, a: np.arccos(x))),
    "Atan": unary(lambda x, a: np.arctan(x)),
    "Sinh": unary(_quiet(lambda x, a: np.sinh(x))),
    "Cosh": unary(_quiet(lambda x, a: np.cosh(x))),
    "Asinh": unary(lambda x, a: np.arcsinh(x)),
    "Acosh": unary(_quiet(lambda x, a: np.arccosh(x))),
    "Atanh": unary(_quiet(lambda x, a: np.arctanh(x))),
    "Pow": binary(_quiet(_pow)),
    "Mod": OpDef(_mod, broadcast(), unsupported=_mod_unsupported),
    "Min": variadic(np.minimum),  # NaN wins, as in onnxruntime
    "Max": variadic(np.maximum),
    "Sum": variadic(np.add),
    "Mean": OpDef(_mean, broadcast()),
    "Equal": binary(np.equal, "bool"),
    "Less": binary(np.less, "bool"),
    "Greater": binary(np.greater, "bool"),
    "LessOrEqual": binary(np.less_equal, "bool"),
    "GreaterOrEqual": binary(np.greater_equal, "bool"),
    "Not": unary(lambda x, a: np.logical_not(x)),
    "And": binary(np.logical_and, "bool"),
    "Or": binary(np.logical_or, "bool"),
    "Xor": binary(np.logical_xor, "bool"),
    "Where": OpDef(_where, lambda inputs, attrs: [(broadcast()(inputs, attrs)[0][0], dtype_name(inputs[1]))]),
    "IsNaN": predicate(lambda x, a: np.isnan(x)),
    "IsInf": predicate(_is_inf),
    "BitwiseAnd": binary(np.bitwise_and),
    "BitwiseOr": binary(np.bitwise_or),
    "BitwiseXor": binary(np.bitwise_xor),
    "BitwiseNot": unary(lambda x, a: np.invert(x)),
    "BitShift": OpDef(_bit_shift, broadcast(), unsupported=_bit_shift_unsupported),
    "BitCast": OpDef(_bit_cast, _bit_cast_types, unsupported=_bit_cast_unsupported),
    "CastLike": OpDef(_cast_like, lambda inputs, attrs: [(tuple(inputs[0].shape), dtype_name(inputs[1]))]),
}
