"""Quantization helpers with ONNX semantics (per-tensor scale and zero point).

quantize:   q = saturate(round_half_even(x / scale) + zero_point)        (QuantizeLinear)
dequantize: x = (q - zero_point) * scale                                  (DequantizeLinear)
requantize: q' = saturate(round_half_even(acc * in_scale / out_scale) + out_zero_point),
            computed in float32 (the accumulator is int32).
"""
from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import dtype as dt
from . import tags


def _saturate_round(v, zero_point, dtype):
    lo, hi = dt.int_range(dtype)
    r = te.round(v) + E.Const(float(zero_point), v.dtype)
    r = E.max_expr(E.min_expr(r, E.Const(float(hi), v.dtype)), E.Const(float(lo), v.dtype))
    # NaN has no integer (converting it is undefined): onnxruntime gives it the type's lowest
    # value whatever the zero point; v == v is false for NaN alone
    r = E.Select(E.EQ(v, v), r, E.Const(float(lo), v.dtype))
    return te.cast(dtype, r)


def quantize(x, scale, zero_point=0, dtype="int8"):
    if not dt.is_float(x.dtype):
        raise TypeError(f"quantize: input must be float, got {x.dtype}")
    return te.compute(x.shape, lambda *i: _saturate_round(x(*i) / E.Const(float(scale), x.dtype),
                                                          zero_point, dtype),
                      name="quantize", tag=tags.ELEMWISE)


def dequantize(q, scale, zero_point=0, dtype="float32"):
    return te.compute(q.shape, lambda *i: (te.cast(dtype, q(*i)) - E.Const(float(zero_point), dtype))
                      * E.Const(float(scale), dtype), name="dequantize", tag=tags.ELEMWISE)


def requantize(x, in_scale, out_scale, out_zero_point=0, dtype="int8"):
    if not dt.is_int(x.dtype):
        raise TypeError(f"requantize: input must be an integer accumulator, got {x.dtype}")
    m = float(in_scale) / float(out_scale)
    return te.compute(x.shape, lambda *i: _saturate_round(te.cast("float32", x(*i)) * E.Const(m, "float32"),
                                                          out_zero_point, dtype),
                      name="requantize", tag=tags.ELEMWISE)
