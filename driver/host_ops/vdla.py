"""The VDLA graph operators in numpy: what each accelerator kernel computes, bit for bit, on
the SPEC §7 packed int8 layouts. They are the reference interpretation of a quantized graph
and the CPU fallback of last resort for its accelerator nodes.

Activations are (N/B, C/L, H, W, B, L) int8 (B = BATCH, L = BLOCK; padded lanes are zeros),
a matrix is (M/B, K/L, B, L). Weights, biases and multipliers are stored packed as the
kernels read them. Integer semantics are the hardware's (SPEC §3): int32 accumulation that
wraps, SHR = floor shift, MUL keeps the low 32 bits, the STORE keeps the low 8 bits."""
from __future__ import annotations

import numpy as np

from .errors import HostOpError


def _wrap(x):
    return np.asarray(x, dtype=np.int64).astype(np.int32).astype(np.int64)


def _unpack_act(x):
    nb, cb, h, w, b, l = x.shape
    return x.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * l, h, w)


def _pack_act(x, batch, block):
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n // batch, batch, c // block, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def _channel_vector(v):
    """(O/L, B, L) packed per-channel vector -> (O,)."""
    return v[:, 0, :].reshape(-1).astype(np.int64)


def epilogue(acc, ep: dict, bias=None, scale=None, residual=None):
    """The ALU epilogue of vdla.compiler.topi.vdla.Epilogue on int32 accumulators with channels
    on axis 1; returns int8."""
    x = _wrap(acc)
    shape = [1] * x.ndim
    shape[1] = -1
    if ep.get("bias"):
        x = _wrap(x + bias.reshape(shape))
    if ep.get("pre_shift"):
        x = x >> ep["pre_shift"]
    if ep.get("scale"):
        x = _wrap(x * scale.reshape(shape))
    if ep.get("mul") is not None:
        x = _wrap(x * ep["mul"])
    if ep.get("shift"):
        if ep.get("round"):
            x = _wrap(x + (1 << (ep["shift"] - 1)))
        x = x >> ep["shift"]
    if ep.get("residual"):
        x = _wrap(x + residual.astype(np.int64))
    if ep.get("lo") is not None:
        x = np.maximum(x, ep["lo"])
    if ep.get("hi") is not None:
        x = np.minimum(x, ep["hi"])
    return x.astype(np.int32).astype(np.int8)


def _extras(inputs, ep):
    """(bias, scale, residual) from the operands after x and w, in kernel order."""
    rest = list(inputs[2:])
    bias = _channel_vector(rest.pop(0)) if ep.get("bias") else None
    scale = _channel_vector(rest.pop(0)) if ep.get("scale") else None
    residual = rest.pop(0) if ep.get("residual") else None
    return bias, scale, residual


def _windows(x, kh, kw, stride, pads, pad_value=0):
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=pad_value)
    return np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]


def _conv(inputs, attrs):
    x, w = inputs[0], inputs[1]
    layer, ep = attrs["layer"], attrs["epilogue"]
    batch, block = x.shape[4], x.shape[5]
    xn = _unpack_act(x)
    win = _windows(xn, layer["kh"], layer["kw"], layer["stride"], layer["pads"], layer.get("pad_value", 0))
    if layer.get("depthwise"):
        cb, kh, kw, lo, li = w.shape
        diag = w[:, :, :, np.arange(lo), np.arange(li)]                  # (C/L, KH, KW, L)
        wd = diag.transpose(0, 3, 1, 2).reshape(cb * lo, kh, kw).astype(np.int64)
        acc = np.einsum("nchwij,cij->nchw", win, wd)
    else:
        ob, cb, kh, kw, lo, li = w.shape
        wn = w.transpose(0, 4, 1, 5, 2, 3).reshape(ob * lo, cb * li, kh, kw).astype(np.int64)
        acc = np.einsum("nchwij,ocij->nohw", win, wn)
    bias, scale, residual = _extras(inputs, ep)
    if residual is not None:
        residual = _unpack_act(residual)
    return [_pack_act(epilogue(acc, ep, bias, scale, residual), batch, block)]


def _dense(inputs, attrs):
    x, w = inputs[0], inputs[1]
    ep = attrs["epilogue"]
    mb, kb, batch, block = x.shape
    a = x.transpose(0, 2, 1, 3).reshape(mb * batch, kb * block).astype(np.int64)
    nb = w.shape[0]
    bmat = w.transpose(0, 2, 1, 3).reshape(nb * block, kb * block).astype(np.int64)
    bias, scale, residual = _extras(inputs, ep)
    if residual is not None:
        residual = residual.transpose(0, 2, 1, 3).reshape(mb * batch, nb * block)
    y = epilogue(a @ bmat.T, ep, bias, scale, residual)
    return [np.ascontiguousarray(y.reshape(mb, batch, nb, block).transpose(0, 2, 1, 3))]


def _pool(inputs, attrs):
    x = inputs[0]
    layer, ep = attrs["layer"], attrs["epilogue"]
    is_max = layer["mode"] == "max"      # max pooling pads with -128 (LOAD pad_min), sums with 0
    win = _windows(_unpack_act(x), layer["kh"], layer["kw"], layer["stride"], layer["pads"], -128 if is_max else 0)
    acc = win.max(axis=(-1, -2)) if is_max else win.sum(axis=(-1, -2))
    return [_pack_act(epilogue(acc, ep), x.shape[4], x.shape[5])]


def _add(inputs, attrs):
    a, b = inputs[0], inputs[1]
    if len(inputs) > 2:                       # per-channel multipliers (C/L, B, L), broadcast over pixels
        shape = (1, a.shape[1], 1, 1, 1, a.shape[5])
        ma = inputs[2][:, 0, :].astype(np.int64).reshape(shape)
        mb = inputs[3][:, 0, :].astype(np.int64).reshape(shape)
    else:
        ma, mb = attrs["ma"], attrs["mb"]
    total = _wrap(a.astype(np.int64) * ma + b.astype(np.int64) * mb)
    if attrs.get("offset"):                   # a per-channel constant (the zero points' terms)
        total = _wrap(total + inputs[4][:, 0, :].astype(np.int64).reshape(1, a.shape[1], 1, 1, 1, a.shape[5]))
    return [epilogue(total.reshape(a.shape[0], -1), attrs["epilogue"]).reshape(a.shape)]


def _channel_scale(scale, x):
    """A scalar scale, or one per channel (axis 1; a padded list is cut to the channels)."""
    s = np.asarray(scale, np.float64)
    if s.ndim == 0 or s.size == 1:
        return s.reshape(())
    s = s[:x.shape[1]]
    return s.reshape((1, -1) + (1,) * (x.ndim - 2))


def nonfinite_values(x) -> str:
    """How many NaN, inf and -inf values `x` holds, in words ("3 NaN values, 1 inf value")."""
    counts = {"NaN": int(np.isnan(x).sum()), "inf": int(np.isposinf(x).sum()), "-inf": int(np.isneginf(x).sum())}
    return ", ".join(f"{n} {what} value{'s' * (n > 1)}" for what, n in counts.items() if n)


def _check_finite(x) -> None:
    """A NaN cast to int8 is whatever the machine makes of it, and ±inf only saturates: either
    way the accelerator computes a plausible-looking answer from no number at all, so the
    quantization refuses them (the executor names the step, quantize_<tensor>)."""
    bad = ~np.isfinite(x)
    if not bad.any():
        return
    held = nonfinite_values(x)
    first = [int(i) for i in np.argwhere(bad)[0]]
    raise HostOpError(f"the tensor quantized for the accelerator holds {held} (of {x.size}, the first at "
                      f"index {first}) where the accelerator takes int8: a non-finite number has no int8 value; "
                      f"check the data fed to the model, or the CPU step that computed the tensor")


def quantize_packed(x, scale, batch, block):
    """fp32 NCHW (or NC) -> int8 packed: round half to even, saturate (scale per channel or one)."""
    x = np.asarray(x, np.float64)
    _check_finite(x)
    q = np.clip(np.rint(x / _channel_scale(scale, x)), -128, 127).astype(np.int8)
    if q.ndim == 2:
        q = q[:, :, None, None]
    n, c = q.shape[:2]
    nn_, cc = -(-n // batch) * batch, -(-c // block) * block
    q = np.pad(q, ((0, nn_ - n), (0, cc - c), (0, 0), (0, 0)))
    return _pack_act(q, batch, block)


def _quantize(inputs, attrs):
    packed = quantize_packed(inputs[0], attrs["scale"], attrs["batch"], attrs["block"])
    if attrs.get("matrix"):
        packed = packed.reshape(packed.shape[0], packed.shape[1], packed.shape[4], packed.shape[5])
    return [packed]


def _dequantize(inputs, attrs):
    q = inputs[0]
    if q.ndim == 4:                                   # a matrix (M/B, K/L, B, L)
        q = q.reshape(q.shape[0], q.shape[1], 1, 1, q.shape[2], q.shape[3])
    shape = attrs["shape"]
    x = _unpack_act(q)[:shape[0], :shape[1]]
    s = _channel_scale(attrs["scale"], x).astype(np.float32)
    zp = attrs.get("zero_point", 0)
    return [((x.astype(np.float32) - np.float32(zp)) * s).reshape(shape)]


OPS = {
    "VdlaConv": _conv,
    "VdlaDense": _dense,
    "VdlaPool": _pool,
    "VdlaAdd": _add,
    "VdlaQuantize": _quantize,
    "VdlaDequantize": _dequantize,
}
