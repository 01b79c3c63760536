"""Linear quantization operators (ONNX QuantizeLinear family) with integer accumulation."""
from __future__ import annotations

import numpy as np

from .nn import conv


def _per_axis(param, rank: int, axis: int):
    param = np.asarray(param)
    if param.ndim == 0 or param.size == 1:
        return param.reshape(())
    shape = [1] * rank
    shape[axis % rank] = param.size
    return param.reshape(shape)


def _saturate(values: np.ndarray, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.rint(values), info.min, info.max).astype(dtype)


def quantize(x, scale, zero_point, axis=1, dtype=None):
    dtype = np.dtype(dtype or (zero_point.dtype if zero_point is not None else np.uint8))
    zp = 0 if zero_point is None else _per_axis(zero_point, x.ndim, axis).astype(np.float64)
    # x / scale in x's own precision, as onnxruntime and the compiled kernel divide: a float64
    # quotient can land on the other side of a .5 tie (178 for 179 in the onnx node tests)
    ftype = x.dtype if x.dtype in (np.float32, np.float64) else np.float64
    q = np.rint((x.astype(ftype) / _per_axis(scale, x.ndim, axis).astype(ftype)).astype(np.float64)) + zp
    # NaN has no integer (numpy's cast of it is whatever the machine makes); onnxruntime clamps
    # with max/min instructions that answer the bound for NaN, so NaN lands on the type's lowest
    # value whatever the zero point, and ±inf saturates
    q = np.where(np.isnan(q), np.iinfo(dtype).min, q)
    return _saturate(q, dtype)


def _quantize_linear(inputs, attrs):
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    return [quantize(x, scale, zp, attrs.get("axis", 1), attrs.get("output_dtype"))]


def _dequantize_linear(inputs, attrs):
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    axis = attrs.get("axis", 1)
    centered = x.astype(np.int64) - (0 if zp is None else _per_axis(zp, x.ndim, axis).astype(np.int64))
    return [(centered * _per_axis(scale, x.ndim, axis)).astype(np.asarray(scale).dtype)]


def _requantize(acc: np.ndarray, multiplier, y_zp, out_dtype) -> np.ndarray:
    zp = 0 if y_zp is None else np.asarray(y_zp).astype(np.float64)
    return _saturate(acc.astype(np.float64) * multiplier + zp, out_dtype)


def _qlinear_conv(inputs, attrs):
    x, xs, xzp, w, ws, wzp, ys, yzp = inputs[:8]
    bias = inputs[8] if len(inputs) > 8 else None
    xc = x.astype(np.int32) - np.asarray(xzp, np.int32)
    wzp_b = _per_axis(wzp, w.ndim, 0).astype(np.int32) if wzp is not None else 0
    wc = w.astype(np.int32) - wzp_b
    acc = conv(xc, wc, None, attrs, acc_dtype=np.int64)
    if bias is not None:
        acc = acc + bias.reshape((1, -1) + (1,) * (x.ndim - 2)).astype(np.int64)
    scale = np.asarray(ws, np.float64).reshape((1, -1) + (1,) * (x.ndim - 2)) \
        if np.asarray(ws).size > 1 else np.float64(ws)
    multiplier = np.float64(xs) * scale / np.float64(ys)
    return [_requantize(acc, multiplier, yzp, (yzp if yzp is not None else x).dtype)]


def _qlinear_matmul(inputs, attrs):
    a, as_, azp, b, bs, bzp, ys, yzp = inputs[:8]
    ac = a.astype(np.int64) - np.asarray(azp, np.int64)
    bzp_b = np.asarray(bzp, np.int64)
    bc = b.astype(np.int64) - (bzp_b if bzp_b.size == 1 else bzp_b.reshape(1, -1))
    acc = np.matmul(ac, bc)
    bscale = np.asarray(bs, np.float64)
    multiplier = np.asarray(as_, np.float64) * (bscale if bscale.size == 1 else bscale.reshape(1, -1)) \
        / np.asarray(ys, np.float64)
    return [_requantize(acc, multiplier, yzp, np.asarray(yzp).dtype)]


OPS = {
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
    "QLinearConv": _qlinear_conv,
    "QLinearMatMul": _qlinear_matmul,
}
