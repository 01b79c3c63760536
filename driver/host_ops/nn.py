"""Convolution, pooling, matrix products, normalization and reductions (N-d spatial, NCHW-style
layouts: batch, channel, spatial...). Attributes are explicit: pads as [begin..., end...]."""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._operands import operand
from .axes import normalize_axis
from .errors import HostOpError
from .window_bounds import padding_dominates, reduce_windows, tap_counts, touched_taps


def pool_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
                     dilation: int = 1, ceil_mode: bool = False) -> int:
    """Output length of a sliding window; in ceil mode the last window must start inside the
    input or its leading padding."""
    span = (kernel - 1) * dilation + 1
    room = size + pad_begin + pad_end - span
    out = (math.ceil(room / stride) if ceil_mode else room // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def _windows(x: np.ndarray, kernel, strides, dilations, out_sizes) -> np.ndarray:
    """View of shape (N, C, *out, *kernel) over an already padded x."""
    spatial = x.strides[2:]
    shape = x.shape[:2] + tuple(out_sizes) + tuple(kernel)
    strides_ = (x.strides[:2] + tuple(s * st for s, st in zip(spatial, strides))
                + tuple(s * d for s, d in zip(spatial, dilations)))
    return as_strided(x, shape=shape, strides=strides_, writeable=False)


def _spatial_attrs(x, attrs, kernel):
    nd = x.ndim - 2
    strides = attrs.get("strides") or [1] * nd
    dilations = attrs.get("dilations") or [1] * nd
    pads = attrs.get("pads") or [0] * (2 * nd)
    return strides, dilations, pads


def _pad_spatial(x, pads_begin, pads_end, value):
    width = [(0, 0), (0, 0)] + list(zip(pads_begin, pads_end))
    if not any(b or e for b, e in width):
        return x
    return np.pad(x, width, mode="constant", constant_values=value)


def conv(x: np.ndarray, w: np.ndarray, bias, attrs: dict, acc_dtype=None) -> np.ndarray:
    nd = x.ndim - 2
    kernel = w.shape[2:]
    strides, dilations, pads = _spatial_attrs(x, attrs, kernel)
    group = attrs.get("group", 1)
    out_sizes = [pool_output_size(x.shape[2 + i], kernel[i], strides[i], pads[i], pads[nd + i],
                                  dilations[i]) for i in range(nd)]
    if padding_dominates(x.shape[2:], pads[:nd], pads[nd:]):
        return _conv_touched(x, w, bias, strides, dilations, pads[:nd], out_sizes, group, acc_dtype)
    xp = _pad_spatial(x, pads[:nd], pads[nd:], 0)
    win = _windows(xp, kernel, strides, dilations, out_sizes)  # N, C, *O, *K
    out = _conv_windows(win, w, group, acc_dtype)
    return _plus_bias(out, bias)


def _conv_windows(win: np.ndarray, w: np.ndarray, group: int, acc_dtype) -> np.ndarray:
    """The convolution of (N, C, *O, *K) windows with (M, C/group, *K) weights: (N, M, *O)."""
    nd = w.ndim - 2
    n, c, out_sizes, kernel = win.shape[0], win.shape[1], win.shape[2:2 + nd], w.shape[2:]
    m = w.shape[0]
    cg, mg = c // group, m // group
    win = win.reshape((n, group, cg) + win.shape[2:])
    order = (0, 1) + tuple(range(3, 3 + nd)) + (2,) + tuple(range(3 + nd, 3 + 2 * nd))
    p, kk = int(np.prod(out_sizes)), int(np.prod(kernel))
    cols = np.asarray(win.transpose(order), order="C").reshape(n, group, p, cg * kk)
    wmat = w.reshape(group, mg, cg * kk)
    if acc_dtype is not None:
        cols, wmat = cols.astype(acc_dtype), wmat.astype(acc_dtype)
    out = np.matmul(cols, wmat.transpose(0, 2, 1))  # N, G, P, Mg
    return out.transpose(0, 1, 3, 2).reshape((n, m) + tuple(out_sizes))


def _plus_bias(out: np.ndarray, bias) -> np.ndarray:
    if bias is None:
        return out
    return out + bias.reshape((1, out.shape[1]) + (1,) * (out.ndim - 2)).astype(out.dtype)


def _conv_touched(x, w, bias, strides, dilations, begins, out_sizes, group, acc_dtype) -> np.ndarray:
    """conv() where padding dominates (window_bounds): the windows of the outputs that touch real
    data gathered from x with one zero appended per axis; the other outputs are the bias alone."""
    nd = x.ndim - 2
    axes = [touched_taps(x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i], begins[i], out_sizes[i])
            for i in range(nd)]
    padded = np.pad(x, [(0, 0), (0, 0)] + [(0, 1)] * nd)
    # axis i's taps [touched_i, K_i] broadcast to [*touched, *K]: touched_i at i, K_i at nd + i
    index = tuple(taps.reshape([taps.shape[0] if k == i else taps.shape[1] if k == nd + i else 1
                                for k in range(2 * nd)]) for i, (_, taps) in enumerate(axes))
    win = padded[(slice(None), slice(None)) + index]                      # N, C, *touched, *K
    part = _conv_windows(win, w, group, acc_dtype)
    out = np.zeros((x.shape[0], w.shape[0]) + tuple(out_sizes), part.dtype)
    out[(slice(None), slice(None)) + np.ix_(*[touched for touched, _ in axes])] = part
    return _plus_bias(out, bias)


def _conv(inputs, attrs):
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    return [conv(x, w, bias, attrs).astype(x.dtype)]


def _conv_transpose(inputs, attrs):
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    nd = x.ndim - 2
    kernel = w.shape[2:]
    strides = attrs.get("strides") or [1] * nd
    dilations = attrs.get("dilations") or [1] * nd
    pads = attrs.get("pads") or [0] * (2 * nd)
    out_pad = attrs.get("output_padding") or [0] * nd
    group = attrs.get("group", 1)
    n, c = x.shape[:2]
    cg = c // group
    mg = w.shape[1]
    full = [(x.shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 + out_pad[i]
            for i in range(nd)]
    # the output is the full result cropped by the pads (a negative pad: zeros beyond it); each
    # tap adds into it only where it lands inside, so pads and dilations far past the input cost
    # what the input and the output cost, not the full result's size
    out_sizes = [full[i] - pads[i] - pads[nd + i] for i in range(nd)]
    y = np.zeros((n, group, mg) + tuple(out_sizes), dtype=np.float64)
    xg = x.reshape((n, group, cg) + x.shape[2:]).astype(np.float64)
    wg = w.reshape((group, cg, mg) + tuple(kernel)).astype(np.float64)
    for k in np.ndindex(*kernel):
        # input i lands on output i * stride + k * dilation - pad_begin
        first = [max(0, -(-(pads[i] - k[i] * dilations[i]) // strides[i])) for i in range(nd)]
        last = [min(x.shape[2 + i] - 1, (out_sizes[i] - 1 + pads[i] - k[i] * dilations[i]) // strides[i])
                for i in range(nd)]
        if any(f > la for f, la in zip(first, last)):
            continue
        part = xg[(slice(None),) * 3 + tuple(slice(f, la + 1) for f, la in zip(first, last))]
        contrib = np.einsum("ngc...,gcm->ngm...", part, wg[(slice(None),) * 3 + k])
        index = tuple(slice(first[i] * strides[i] + k[i] * dilations[i] - pads[i],
                            last[i] * strides[i] + k[i] * dilations[i] - pads[i] + 1, strides[i]) for i in range(nd))
        y[(slice(None),) * 3 + index] += contrib
    y = y.reshape((n, group * mg) + tuple(out_sizes))
    if bias is not None:
        y = y + bias.reshape((1, -1) + (1,) * nd)
    return [y.astype(x.dtype)]


def _gemm(inputs, attrs):
    a, b = inputs[0], inputs[1]
    c = inputs[2] if len(inputs) > 2 else None
    if attrs.get("transA", 0):
        a = a.T
    if attrs.get("transB", 0):
        b = b.T
    y = attrs.get("alpha", 1.0) * (a @ b)
    if c is not None:
        y = y + attrs.get("beta", 1.0) * c
    return [np.asarray(y, dtype=inputs[0].dtype)]


def _matmul(inputs, attrs):
    return [np.matmul(inputs[0], inputs[1])]


def _matmul_panels(inputs, attrs):
    """x [rows, K] @ w, w stored as [N / P, K, P] panels of P columns -> [rows, N]."""
    x, w = inputs
    panels, k, width = w.shape
    return [np.matmul(x, w.transpose(1, 0, 2).reshape(k, panels * width))]


def _batch_norm(inputs, attrs):
    x, scale, bias, mean, var = inputs[:5]
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if attrs.get("training_mode"):     # the batch's statistics (population variance), and the running ones
        axes = (0,) + tuple(range(2, x.ndim))
        batch_mean, batch_var = x.mean(axis=axes), x.var(axis=axes)
        momentum = attrs.get("momentum", 0.9)
        y = (x - batch_mean.reshape(shape)) / np.sqrt(batch_var.reshape(shape) + attrs.get("epsilon", 1e-5))
        y = y * scale.reshape(shape) + bias.reshape(shape)
        return [y.astype(x.dtype), (mean * momentum + batch_mean * (1 - momentum)).astype(mean.dtype),
                (var * momentum + batch_var * (1 - momentum)).astype(var.dtype)]
    inv = scale / np.sqrt(var + attrs.get("epsilon", 1e-5))
    y = (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)
    return [y.astype(x.dtype)]


def _pool(x, attrs, reducer):
    nd = x.ndim - 2
    kernel = attrs["kernel_shape"]
    strides, dilations, pads = _spatial_attrs(x, attrs, kernel)
    ceil_mode = bool(attrs.get("ceil_mode", 0))
    out_sizes = [pool_output_size(x.shape[2 + i], kernel[i], strides[i], pads[i], pads[nd + i],
                                  dilations[i], ceil_mode) for i in range(nd)]
    # Ceil mode may read past the end padding: extend the padding so every window exists.
    extra = [max(0, (out_sizes[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
                 - (x.shape[2 + i] + pads[i] + pads[nd + i])) for i in range(nd)]
    ends = [pads[nd + i] + extra[i] for i in range(nd)]
    return reducer(x, pads[:nd], ends, kernel, strides, dilations, out_sizes, nd)


def _max_pool(inputs, attrs):
    x = inputs[0]

    def reduce(x, begins, ends, kernel, strides, dilations, out_sizes, nd):
        low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        if padding_dominates(x.shape[2:], begins, ends):
            if attrs.get("indices"):
                raise HostOpError("MaxPool's Indices output for a window this much wider than its input (its pads "
                                  f"{list(begins) + list(ends)} on {list(x.shape[2:])}) is not supported")
            return reduce_windows(x, kernel, strides, dilations, begins, out_sizes, np.max, low)
        xp = _pad_spatial(x, begins, ends, low)
        win = _windows(xp, kernel, strides, dilations, out_sizes)
        y = win.max(axis=tuple(range(-nd, 0)))
        if not attrs.get("indices"):
            return y
        return y, _argmax_indices(x.shape, win, begins, kernel, strides, dilations, attrs.get("storage_order", 0))
    result = _pool(x, attrs, reduce)
    if isinstance(result, tuple):
        return [result[0].astype(x.dtype), result[1]]
    return [result.astype(x.dtype)]


def _argmax_indices(shape, win, begins, kernel, strides, dilations, storage_order) -> np.ndarray:
    """MaxPool's Indices: where each window's maximum (its first, in the window's row-major order)
    sits in the unpadded input, as a flat index over the whole tensor: row-major, or with the
    spatial axes in column-major order for storage_order 1."""
    nd = len(kernel)
    out = win.shape[2:2 + nd]
    taps = np.unravel_index(win.reshape(win.shape[:2 + nd] + (-1,)).argmax(axis=-1), kernel)
    grid = np.meshgrid(*[np.arange(o) for o in out], indexing="ij")
    coords = [g * s + t * d - b for g, s, t, d, b in zip(grid, strides, taps, dilations, begins)]
    n, c = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    index = (n[(...,) + (None,) * nd] * shape[1] + c[(...,) + (None,) * nd]).astype(np.int64)
    spatial = list(zip(coords, shape[2:]))
    for coord, size in (spatial[::-1] if storage_order else spatial):
        index = index * size + coord
    return index.astype(np.int64)


def _avg_pool(inputs, attrs):
    x = inputs[0]
    include_pad = bool(attrs.get("count_include_pad", 0))
    nd0 = x.ndim - 2
    pads0 = attrs.get("pads") or [0] * (2 * nd0)

    def reduce(x, begins, ends, kernel, strides, dilations, out_sizes, nd):
        if padding_dominates(x.shape[2:], begins, ends):
            return _bounded_average(x, begins, kernel, strides, dilations, out_sizes, pads0 if include_pad else None)
        xp = _pad_spatial(x.astype(np.float64), begins, ends, 0.0)
        axes = tuple(range(-nd, 0))
        total = _windows(xp, kernel, strides, dilations, out_sizes).sum(axis=axes)
        # The divisor counts real elements, plus the declared padding when count_include_pad;
        # the extra ceil-mode padding never counts.
        ones = np.ones((1, 1) + x.shape[2:])
        if include_pad:
            ones = _pad_spatial(ones, pads0[:nd], pads0[nd:], 1.0)
            ones = _pad_spatial(ones, [0] * nd, [e - p for e, p in zip(ends, pads0[nd:])], 0.0)
        else:
            ones = _pad_spatial(ones, begins, ends, 0.0)
        count = _windows(ones, kernel, strides, dilations, out_sizes).sum(axis=axes)
        return total / count
    return [_pool(x, attrs, reduce).astype(x.dtype)]


def _bounded_average(x, begins, kernel, strides, dilations, out_sizes, declared_pads):
    """AveragePool over the real data each window covers (window_bounds): the sum of its real
    values over the count of its taps on real data, or on the declared padding too."""
    nd = len(kernel)
    total = reduce_windows(x.astype(np.float64), kernel, strides, dilations, begins, out_sizes, np.sum, 0.0)
    count = np.ones(())
    for i in range(nd):
        size, begin = x.shape[2 + i], begins[i]
        if declared_pads is not None:      # the declared padding counts as if it were data
            size, begin = size + declared_pads[i] + declared_pads[nd + i], 0
        count = np.multiply.outer(count, tap_counts(size, kernel[i], strides[i], dilations[i], begin, out_sizes[i]))
    return total / count


def _global_avg_pool(inputs, attrs):
    x = inputs[0]
    return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float64).astype(x.dtype)]


def _global_max_pool(inputs, attrs):
    x = inputs[0]
    return [x.max(axis=tuple(range(2, x.ndim)), keepdims=True)]


def _softmax(inputs, attrs):
    x = inputs[0]
    axis = normalize_axis(attrs.get("axis", -1), x.ndim) if x.ndim else 0
    if attrs.get("coerce_2d", False):  # opset < 13: softmax over the flattened trailing dims
        flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
        e = np.exp(flat - flat.max(axis=1, keepdims=True))
        return [(e / e.sum(axis=1, keepdims=True)).reshape(x.shape).astype(x.dtype)]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return [(e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)]


def _reduced_axes(x_shape, inputs, attrs) -> list[int] | None:
    """The axes ReduceMean averages over (sorted, each once); None: it is the identity."""
    axes = operand(inputs, 1, attrs, "axes")
    if axes is None or (isinstance(axes, list) and not axes):
        if attrs.get("noop_with_empty_axes", 0):
            return None
        return list(range(len(x_shape)))
    # onnxruntime accepts an axis named twice (it is reduced once); out-of-range axes are errors
    return sorted({normalize_axis(a, len(x_shape), "axes entry") for a in np.atleast_1d(axes).tolist()})


def _reduce_mean_shapes(inputs, attrs):
    shape = inputs[0].shape
    axes = _reduced_axes(shape, inputs, attrs)
    if axes is None:
        return [tuple(shape)]
    keep = bool(attrs.get("keepdims", 1))
    return [tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)]


def _reduce_mean(inputs, attrs):
    x = inputs[0]
    axes = _reduced_axes(x.shape, inputs, attrs)
    if axes is None:
        return [x]
    keep = bool(attrs.get("keepdims", 1))
    return [x.mean(axis=tuple(axes), keepdims=keep, dtype=np.float64).astype(x.dtype)]


SHAPES = {"ReduceMean": _reduce_mean_shapes}

OPS = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "MatMulPanels": _matmul_panels,
    "BatchNormalization": _batch_norm,
    "MaxPool": _max_pool,
    "AveragePool": _avg_pool,
    "GlobalAveragePool": _global_avg_pool,
    "GlobalMaxPool": _global_max_pool,
    "Softmax": _softmax,
    "ReduceMean": _reduce_mean,
}
