"""Spatial operators of the default ONNX domain that sample, scatter or pool over the spatial axes
of an (N, C, spatial...) tensor: LpPool, GlobalLpPool, MaxUnpool, GridSample, AffineGrid, Col2Im,
RoiAlign, DeformConv and NonMaxSuppression, one OpDef each (Resize is in resize.py).

Operands the output shape depends on (MaxUnpool's output_shape, AffineGrid's size, Col2Im's
image_shape and block_shape) must be compile-time constants. NonMaxSuppression's output length
depends on the values of its boxes and scores: its type rule computes it when they are constants
(then fold_constants folds the node) and otherwise refuses the model.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ._operands import operand
from .errors import OperandError, RuntimeShape, Unimplemented
from .nn import pool_output_size
from .opdef import OpDef, dtype_name
from .window_bounds import padding_dominates, reduce_windows


# -- sliding windows (LpPool, Col2Im, DeformConv) --------------------------------------------------

def _window(attrs, spatial, kernel):
    """(strides, dilations, pads [begin..., end...], output sizes) with auto_pad resolved."""
    nd = len(spatial)
    strides = list(attrs.get("strides") or [1] * nd)
    dilations = list(attrs.get("dilations") or [1] * nd)
    pads = list(attrs.get("pads") or [0] * (2 * nd))
    auto = attrs.get("auto_pad", "NOTSET")
    if len(strides) != nd or len(dilations) != nd or len(pads) != 2 * nd:
        raise OperandError(f"strides {strides}, dilations {dilations} and pads {pads} must give {nd}, {nd} and "
                           f"{2 * nd} values for {nd} spatial axes")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for i in range(nd):
            out = -(-spatial[i] // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - spatial[i], 0)
            small, large = total // 2, total - total // 2
            pads[i], pads[nd + i] = (small, large) if auto == "SAME_UPPER" else (large, small)
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    ceil = bool(attrs.get("ceil_mode", 0))
    out = [pool_output_size(spatial[i], kernel[i], strides[i], pads[i], pads[nd + i], dilations[i], ceil)
           for i in range(nd)]
    if min(out, default=1) < 1:
        raise OperandError(f"kernel {list(kernel)} (dilations {dilations}) does not fit the padded input "
                           f"{list(spatial)} (pads {pads})")
    return strides, dilations, pads, out


def _gather_windows(x, kernel, strides, dilations, pads, out):
    """x (N, C, *spatial) padded with zeros -> (N, C, *kernel, *out): each window's samples."""
    nd = len(kernel)
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    # ceil_mode's last window may reach past the end padding: zeros there too
    ends = [max(e, (o - 1) * s + sp - n - b)
            for o, s, sp, n, b, e in zip(out, strides, span, x.shape[2:], pads[:nd], pads[nd:])]
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(pads[:nd], ends)))
    result = np.empty(x.shape[:2] + tuple(kernel) + tuple(out), x.dtype)
    for taps in itertools.product(*[range(k) for k in kernel]):
        index = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(taps, dilations, out, strides))
        result[(slice(None), slice(None)) + taps] = xp[(slice(None), slice(None)) + index]
    return result


# -- LpPool, GlobalLpPool ------------------------------------------------------------------------

def _lp_pool_plan(shape, attrs):
    kernel = list(attrs["kernel_shape"])
    if len(kernel) != len(shape) - 2:
        raise OperandError(f"kernel_shape {kernel} needs a rank-{len(kernel) + 2} input, got {list(shape)}")
    return (kernel,) + _window(attrs, list(shape[2:]), kernel)


def _lp_pool(inputs, attrs):
    x = inputs[0]
    kernel, strides, dilations, pads, out = _lp_pool_plan(x.shape, attrs)
    p = float(attrs.get("p", 2))
    nd = len(kernel)
    if padding_dominates(x.shape[2:], pads[:nd], pads[nd:]):
        summed = reduce_windows(np.abs(x).astype(np.float64) ** p, kernel, strides, dilations, pads[:nd], out,
                                np.sum, 0.0)
    else:
        windows = _gather_windows(np.abs(x).astype(np.float64), kernel, strides, dilations, pads, out)
        summed = np.sum(windows ** p, axis=tuple(range(2, 2 + nd)))
    return [np.asarray(summed ** (1 / p), dtype=x.dtype)]


def _lp_pool_types(inputs, attrs):
    x = inputs[0]
    out = _lp_pool_plan(tuple(x.shape), attrs)[-1]
    return [(tuple(x.shape[:2]) + tuple(out), dtype_name(x))]


def _global_lp_pool(inputs, attrs):
    x = inputs[0]
    p = float(attrs.get("p", 2))
    axes = tuple(range(2, x.ndim))
    return [np.asarray(np.sum(np.abs(x.astype(np.float64)) ** p, axis=axes, keepdims=True) ** (1 / p), x.dtype)]


def _global_types(inputs, attrs):
    x = inputs[0]
    if x.ndim < 3:
        raise OperandError(f"the input needs a batch, a channel and spatial axes, got shape {list(x.shape)}")
    return [(tuple(x.shape[:2]) + (1,) * (x.ndim - 2), dtype_name(x))]


# -- MaxUnpool -----------------------------------------------------------------------------------

def _unpool_shape(shape, inputs, attrs):
    kernel = list(attrs["kernel_shape"])
    nd = len(shape) - 2
    strides = list(attrs.get("strides") or [1] * nd)
    pads = list(attrs.get("pads") or [0] * (2 * nd))
    inferred = tuple(shape[:2]) + tuple((shape[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[nd + i]
                                        for i in range(nd))
    given = operand(inputs, 2, attrs, "output_shape")
    if given is None:
        return inferred
    given = tuple(int(d) for d in np.ravel(given))
    if len(given) != len(shape) or given[:2] != tuple(shape[:2]):
        raise OperandError(f"output_shape {list(given)} must keep the batch and channels of the input {list(shape)}")
    if given != inferred:
        raise Unimplemented(
            f"MaxUnpool: output_shape {list(given)} differs from the shape the window gives, {list(inferred)}; "
            "onnxruntime (and the specification's flat indices) scatter into output_shape, the onnx reference "
            "implementation into the window's shape placed at the origin, and vdla does not pick one")
    return given


def _max_unpool(inputs, attrs):
    x, index = inputs[0], np.asarray(inputs[1])
    shape = _unpool_shape(x.shape, inputs, attrs)
    y = np.zeros(int(np.prod(shape)), x.dtype)
    if index.shape != x.shape:
        raise OperandError(f"I's shape {list(index.shape)} must equal X's {list(x.shape)}")
    if index.size and (index.min() < 0 or index.max() >= y.size):
        raise OperandError(f"I holds indices outside 0..{y.size - 1}, the flattened output {list(shape)}")
    y[index.ravel()] = x.ravel()
    return [y.reshape(shape)]


def _max_unpool_types(inputs, attrs):
    x = inputs[0]
    return [(_unpool_shape(tuple(x.shape), inputs, attrs), dtype_name(x))]


# -- GridSample ----------------------------------------------------------------------------------

def _reflect(x, low, high):
    """x reflected off the borders low and high until inside them."""
    span = high - low
    if span <= 0:
        return np.zeros_like(x)
    d = np.abs(x - low)
    n = np.floor(d / span)
    r = d - n * span
    inside = np.where(n % 2 == 0, low + r, high - r)
    return np.where((x >= low) & (x <= high), x, inside)


def _grid_taps(coord, length, mode, padding, align):
    """[(index, weight, valid)] per tap of one axis: the samples and weights at `coord` (in pixels)."""
    low, high = (0.0, length - 1.0) if align else (-0.5, length - 0.5)
    if mode == "nearest":
        coord = np.rint(coord)
    outside = (coord < low) | (coord > high)
    if padding == "border" and mode == "cubic":
        pass  # cubic clamps each of its taps (below), not the coordinate, as onnxruntime and PyTorch do
    elif padding == "border":
        coord = np.where(outside, np.clip(coord, 0, length - 1), coord)
    elif padding == "reflection":
        coord = np.where(outside, _reflect(coord, low, high), coord)

    def at(index):
        if padding == "zeros":
            return index, (index >= 0) & (index < length)
        if padding == "border":
            return np.clip(index, 0, length - 1), np.ones(index.shape, bool)
        # reflection of an integer index, truncated toward zero like the float-to-int conversion
        return np.clip(np.trunc(_reflect(index.astype(np.float64), low, high)).astype(np.int64), 0, length - 1), \
            np.ones(index.shape, bool)

    if mode == "nearest":
        index, valid = at(np.trunc(coord).astype(np.int64))
        return [(index, np.ones(coord.shape), valid)]
    base = np.floor(coord)
    t = coord - base
    base = base.astype(np.int64)
    if mode == "linear":
        weights = [1 - t, t]
        offsets = [0, 1]
    else:
        a = -0.75
        weights = [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                   ((a + 2) * t - (a + 3)) * t * t + 1,
                   ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                   ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]
        offsets = [-1, 0, 1, 2]
    return [(idx, w, ok) for (idx, ok), w in ((at(base + o), w) for o, w in zip(offsets, weights))]


def _grid_mode(attrs):
    mode = attrs.get("mode", "linear")
    return {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)


def _grid_sample(inputs, attrs):
    x, grid = inputs[0], inputs[1].astype(np.float64)
    nd = x.ndim - 2
    spatial = x.shape[2:]
    align = bool(attrs.get("align_corners", 0))
    mode, padding = _grid_mode(attrs), attrs.get("padding_mode", "zeros")
    per_axis = []
    for d in range(nd):
        g = grid[..., nd - 1 - d]  # the grid lists coordinates innermost axis first (x, y, z)
        length = spatial[d]
        coord = (g + 1) / 2 * (length - 1) if align else ((g + 1) * length - 1) / 2
        per_axis.append(_grid_taps(coord, length, mode, padding, align))
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1).astype(np.float64)
    batch = np.arange(n).reshape((n,) + (1,) * (grid.ndim - 2))
    out = np.zeros((n,) + grid.shape[1:-1] + (c,))
    strides = [int(np.prod(spatial[d + 1:])) for d in range(nd)]
    for combo in itertools.product(*per_axis):
        index = sum(i * s for (i, _, _), s in zip(combo, strides))
        weight = np.prod([w for _, w, _ in combo], axis=0) * np.all([ok for _, _, ok in combo], axis=0)
        picked = flat[batch, :, np.where(weight != 0, index, 0)]  # (N, *out, C)
        out += picked * weight[..., None]
    return [np.asarray(np.moveaxis(out, -1, 1), x.dtype)]


def _grid_sample_types(inputs, attrs):
    x, grid = inputs[0], inputs[1]
    nd = x.ndim - 2
    if grid.ndim != x.ndim or grid.shape[0] != x.shape[0] or grid.shape[-1] != nd:
        raise OperandError(f"grid of shape {list(grid.shape)} must be (N, out spatial..., {nd}) for the input "
                           f"{list(x.shape)}")
    return [(tuple(x.shape[:2]) + tuple(grid.shape[1:-1]), dtype_name(x))]


def _grid_sample_unsupported(attrs):
    if _grid_mode(attrs) not in ("linear", "nearest", "cubic"):
        return f"mode {attrs['mode']!r} is not supported; supported: linear (bilinear), nearest, cubic (bicubic)"
    if attrs.get("padding_mode", "zeros") not in ("zeros", "border", "reflection"):
        return f"padding_mode {attrs['padding_mode']!r} is not supported; supported: zeros, border, reflection"
    return None


# -- AffineGrid ----------------------------------------------------------------------------------

def _affine_size(inputs, attrs):
    size = operand(inputs, 1, attrs, "size")
    size = [int(d) for d in np.ravel(size)] if size is not None else None
    if size is None or len(size) not in (4, 5):
        raise OperandError(f"size must be [N, C, H, W] or [N, C, D, H, W], got {size}")
    return size


def _affine_grid(inputs, attrs):
    theta = inputs[0]
    size = _affine_size(inputs, attrs)
    spatial = size[2:]
    align = bool(attrs.get("align_corners", 0))

    def base(length):
        if align:
            return np.linspace(-1, 1, length) if length > 1 else np.zeros(length)
        return (2 * np.arange(length) + 1) / length - 1
    axes = np.meshgrid(*[base(n) for n in spatial], indexing="ij")
    points = np.stack(list(axes)[::-1] + [np.ones(spatial)], axis=-1)  # (..., x, y[, z], 1)
    grid = np.einsum("...k,njk->n...j", points, theta.astype(np.float64))
    return [np.asarray(grid, theta.dtype)]


def _affine_grid_types(inputs, attrs):
    theta = inputs[0]
    size = _affine_size(inputs, attrs)
    nd = len(size) - 2
    if tuple(theta.shape) != (size[0], nd, nd + 1):
        raise OperandError(f"theta of shape {list(theta.shape)} must be ({size[0]}, {nd}, {nd + 1}) for size {size}")
    return [(tuple([size[0]] + size[2:] + [nd]), dtype_name(theta))]


# -- Col2Im --------------------------------------------------------------------------------------

def _col2im_plan(shape, inputs, attrs):
    image = [int(d) for d in np.ravel(operand(inputs, 1, attrs, "image_shape"))]
    block = [int(d) for d in np.ravel(operand(inputs, 2, attrs, "block_shape"))]
    if len(image) != len(block):
        raise OperandError(f"image_shape {image} and block_shape {block} must have one entry per spatial axis")
    strides, dilations, pads, grid = _window({k: attrs.get(k) for k in ("strides", "dilations", "pads")}, image, block)
    per_block = int(np.prod(block))
    if len(shape) != 3 or shape[1] % per_block or shape[2] != int(np.prod(grid)):
        raise OperandError(f"input of shape {list(shape)} must be (N, C * {per_block}, {int(np.prod(grid))}) for "
                           f"blocks {block} over the image {image}")
    return image, block, strides, dilations, pads, grid


def _col2im(inputs, attrs):
    x = inputs[0]
    image, block, strides, dilations, pads, grid = _col2im_plan(x.shape, inputs, attrs)
    nd = len(image)
    n, c = x.shape[0], x.shape[1] // int(np.prod(block))
    cols = x.reshape((n, c) + tuple(block) + tuple(grid))
    padded = np.zeros((n, c) + tuple(d + pads[i] + pads[nd + i] for i, d in enumerate(image)), x.dtype)
    for taps in itertools.product(*[range(k) for k in block]):
        index = tuple(slice(t * d, t * d + (g - 1) * s + 1, s) for t, d, g, s in zip(taps, dilations, grid, strides))
        padded[(slice(None), slice(None)) + index] += cols[(slice(None), slice(None)) + taps]
    crop = tuple(slice(pads[i], pads[i] + d) for i, d in enumerate(image))
    return [np.ascontiguousarray(padded[(slice(None), slice(None)) + crop])]


def _col2im_types(inputs, attrs):
    x = inputs[0]
    image, block = _col2im_plan(tuple(x.shape), inputs, attrs)[:2]
    return [((x.shape[0], x.shape[1] // int(np.prod(block))) + tuple(image), dtype_name(x))]


# -- RoiAlign ------------------------------------------------------------------------------------

def _roi_bilinear(height, width, y, x):
    """Per sample point: the four (flat index, weight) pairs, zero weight outside (-1, size]."""
    outside = (y < -1) | (y > height) | (x < -1) | (x > width)
    y, x = np.maximum(y, 0), np.maximum(x, 0)
    y_low, x_low = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    y_edge, x_edge = y_low >= height - 1, x_low >= width - 1
    y_low, x_low = np.where(y_edge, height - 1, y_low), np.where(x_edge, width - 1, x_low)
    y, x = np.where(y_edge, y_low, y), np.where(x_edge, x_low, x)
    y_high, x_high = np.where(y_edge, y_low, y_low + 1), np.where(x_edge, x_low, x_low + 1)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    keep = ~outside
    return [(y_low * width + x_low, hy * hx * keep), (y_low * width + x_high, hy * lx * keep),
            (y_high * width + x_low, ly * hx * keep), (y_high * width + x_high, ly * lx * keep)]


def _roi_align(inputs, attrs):
    x, rois, batch = inputs[0], inputs[1].astype(np.float64), np.asarray(inputs[2]).astype(np.int64)
    n, c, height, width = x.shape
    oh, ow = int(attrs.get("output_height", 1)), int(attrs.get("output_width", 1))
    ratio, scale = int(attrs.get("sampling_ratio", 0)), float(attrs.get("spatial_scale", 1.0))
    half = attrs.get("coordinate_transformation_mode", "output_half_pixel") == "half_pixel"
    if batch.size and (batch.min() < 0 or batch.max() >= n):
        raise OperandError(f"batch_indices hold values outside 0..{n - 1}")
    y = np.zeros((len(rois), c, oh, ow), np.float64)
    flat = x.reshape(n, c, -1).astype(np.float64)
    offset = 0.5 if half else 0.0
    for r, (box, b) in enumerate(zip(rois, batch)):
        x0, y0, x1, y1 = box * scale - offset
        roi_w, roi_h = x1 - x0, y1 - y0
        if not half:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / oh, roi_w / ow
        gh = ratio if ratio > 0 else int(math.ceil(roi_h / oh))
        gw = ratio if ratio > 0 else int(math.ceil(roi_w / ow))
        count = max(gh * gw, 1)
        py = y0 + np.arange(oh)[:, None] * bin_h + (np.arange(gh)[None, :] + 0.5) * bin_h / gh  # (oh, gh)
        px = x0 + np.arange(ow)[:, None] * bin_w + (np.arange(gw)[None, :] + 0.5) * bin_w / gw  # (ow, gw)
        sy = np.broadcast_to(py[:, None, :, None], (oh, ow, gh, gw))
        sx = np.broadcast_to(px[None, :, None, :], (oh, ow, gh, gw))
        corners = _roi_bilinear(height, width, sy, sx)
        values = [flat[b][:, idx] * w for idx, w in corners]  # each (C, oh, ow, gh, gw)
        if attrs.get("mode", "avg") == "avg":
            y[r] = sum(values).sum(axis=(-1, -2)) / count
        elif gh * gw:
            y[r] = np.max(np.maximum.reduce(values), axis=(-1, -2))
    return [np.asarray(y, x.dtype)]


def _roi_align_types(inputs, attrs):
    x, rois, batch = inputs[0], inputs[1], inputs[2]
    if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4 or tuple(batch.shape) != (rois.shape[0],):
        raise OperandError(f"X {list(x.shape)} must be 4-D, rois (num_rois, 4) and batch_indices (num_rois,); got "
                           f"rois {list(rois.shape)}, batch_indices {list(batch.shape)}")
    return [((rois.shape[0], x.shape[1], int(attrs.get("output_height", 1)), int(attrs.get("output_width", 1))),
             dtype_name(x))]


def _roi_align_unsupported(attrs):
    if attrs.get("mode", "avg") not in ("avg", "max"):
        return f"mode {attrs['mode']!r} is not supported; supported: avg, max"
    if attrs.get("coordinate_transformation_mode", "output_half_pixel") not in ("half_pixel", "output_half_pixel"):
        return (f"coordinate_transformation_mode {attrs['coordinate_transformation_mode']!r} is not supported; "
                "supported: half_pixel, output_half_pixel")
    return None


# -- DeformConv ----------------------------------------------------------------------------------

def _deform_plan(x_shape, w_shape, attrs):
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise OperandError(f"DeformConv is 2-D: X {list(x_shape)} and W {list(w_shape)} must be 4-D")
    kernel = list(attrs.get("kernel_shape") or w_shape[2:])
    group, offset_group = int(attrs.get("group", 1)), int(attrs.get("offset_group", 1))
    if x_shape[1] != w_shape[1] * group or w_shape[0] % group or x_shape[1] % offset_group:
        raise OperandError(f"X's {x_shape[1]} channels, W {list(w_shape)}, group {group} and offset_group "
                           f"{offset_group} do not agree")
    strides, dilations, pads, out = _window({k: attrs.get(k) for k in ("strides", "dilations", "pads")},
                                            list(x_shape[2:]), kernel)
    return kernel, group, offset_group, strides, dilations, pads, out


def _deform_conv(inputs, attrs):
    x, w, offset = inputs[0], inputs[1], inputs[2]
    bias = inputs[3] if len(inputs) > 3 else None
    mask = inputs[4] if len(inputs) > 4 else None
    (kh, kw), group, og, strides, dilations, pads, (oh, ow) = _deform_plan(x.shape, w.shape, attrs)
    n, c, height, width = x.shape
    taps = kh * kw
    off = offset.astype(np.float64).reshape(n, og, taps, 2, oh, ow)
    msk = np.ones((n, og, taps, oh, ow)) if mask is None else mask.astype(np.float64).reshape(n, og, taps, oh, ow)
    ki, kj = np.divmod(np.arange(taps), kw)
    base_y = (np.arange(oh) * strides[0] - pads[0])[None, :, None] + (ki * dilations[0])[:, None, None]
    base_x = (np.arange(ow) * strides[1] - pads[1])[None, None, :] + (kj * dilations[1])[:, None, None]
    py = base_y[None, None] + off[:, :, :, 0]  # (N, og, taps, oh, ow)
    px = base_x[None, None] + off[:, :, :, 1]
    inside = (py > -1) & (py < height) & (px > -1) & (px < width)
    y0, x0 = np.floor(py).astype(np.int64), np.floor(px).astype(np.int64)
    ly, lx = py - y0, px - x0
    flat = x.astype(np.float64).reshape(n, og, c // og, height * width)
    cols = np.zeros((n, og, c // og, taps, oh, ow))
    batch = np.arange(n)[:, None, None, None, None]
    group_ = np.arange(og)[None, :, None, None, None]
    for dy, dx, weight in ((0, 0, (1 - ly) * (1 - lx)), (0, 1, (1 - ly) * lx), (1, 0, ly * (1 - lx)), (1, 1, ly * lx)):
        yy, xx = y0 + dy, x0 + dx
        ok = inside & (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
        index = np.where(ok, yy * width + xx, 0)
        picked = flat[batch, group_, :, index]  # (N, og, taps, oh, ow, C/og)
        cols += np.moveaxis(picked * (weight * ok * msk)[..., None], -1, 2)
    cols = cols.reshape(n, group, (c // group) * taps, oh * ow)
    wg = w.astype(np.float64).reshape(group, w.shape[0] // group, -1)
    y = np.einsum("gmk,ngkp->ngmp", wg, cols).reshape(n, w.shape[0], oh, ow)
    if bias is not None:
        y = y + bias.astype(np.float64).reshape(1, -1, 1, 1)
    return [np.asarray(y, x.dtype)]


def _deform_conv_types(inputs, attrs):
    x, w = inputs[0], inputs[1]
    out = _deform_plan(tuple(x.shape), tuple(w.shape), attrs)[-1]
    return [((x.shape[0], w.shape[0]) + tuple(out), dtype_name(x))]


# -- NonMaxSuppression ----------------------------------------------------------------------------

def _needs_values(inputs):
    if all(v is None or isinstance(v, np.ndarray) for v in inputs):
        return
    raise RuntimeShape(
        "NonMaxSuppression: the output shape (the number of selected boxes) depends on the values of the boxes "
        "and scores inputs, which are known only at run time (not compile-time constants)")


def _corners(boxes, center):
    if center:
        xc, yc, w, h = np.moveaxis(boxes, -1, 0)
        return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    y1, x1, y2, x2 = np.moveaxis(boxes, -1, 0)
    return np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)


def _nms(inputs, attrs):
    boxes, scores = inputs[0].astype(np.float64), inputs[1].astype(np.float64)

    def scalar(i, default):
        value = inputs[i] if len(inputs) > i and inputs[i] is not None else None
        return default if value is None or np.size(value) == 0 else np.ravel(value)[0]
    limit = int(scalar(2, 0))
    iou_threshold = float(scalar(3, 0.0))
    score_threshold = scalar(4, None)
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[0] != boxes.shape[0] \
            or scores.shape[2] != boxes.shape[1]:
        raise OperandError(f"boxes {list(boxes.shape)} must be (B, N, 4) and scores {list(scores.shape)} (B, C, N)")
    y1, x1, y2, x2 = _corners(boxes, attrs.get("center_point_box", 0))
    area = (y2 - y1) * (x2 - x1)
    selected = []
    for b, c in itertools.product(range(scores.shape[0]), range(scores.shape[1])):
        s = scores[b, c]
        order = [i for i in np.argsort(-s, kind="stable")
                 if score_threshold is None or s[i] > float(score_threshold)]
        kept = []
        for i in order:
            if len(kept) >= limit:
                break
            ih = np.maximum(np.minimum(y2[b, i], y2[b, kept]) - np.maximum(y1[b, i], y1[b, kept]), 0)
            iw = np.maximum(np.minimum(x2[b, i], x2[b, kept]) - np.maximum(x1[b, i], x1[b, kept]), 0)
            inter = ih * iw
            union = area[b, i] + area[b, kept] - inter
            valid = (area[b, i] > 0) & (area[b, kept] > 0) & (union > 0)
            iou = np.where(valid, inter / np.where(union > 0, union, 1), 0)
            if not np.any(iou > iou_threshold):
                kept.append(i)
        selected += [(b, c, i) for i in kept]
    return [np.array(selected, np.int64).reshape(-1, 3)]


def _nms_types(inputs, attrs):
    _needs_values(inputs)
    return [(_nms(inputs, attrs)[0].shape, "int64")]


DEFS: dict[str, OpDef] = {
    "LpPool": OpDef(_lp_pool, _lp_pool_types),
    "GlobalLpPool": OpDef(_global_lp_pool, _global_types),
    "MaxUnpool": OpDef(_max_unpool, _max_unpool_types, {2: "output_shape"}),
    "GridSample": OpDef(_grid_sample, _grid_sample_types, unsupported=_grid_sample_unsupported),
    "AffineGrid": OpDef(_affine_grid, _affine_grid_types, {1: "size"}),
    "Col2Im": OpDef(_col2im, _col2im_types, {1: "image_shape", 2: "block_shape"}),
    "RoiAlign": OpDef(_roi_align, _roi_align_types, unsupported=_roi_align_unsupported),
    "DeformConv": OpDef(_deform_conv, _deform_conv_types),
    "NonMaxSuppression": OpDef(_nms, _nms_types),
}
