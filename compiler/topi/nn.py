"""Dense/matmul, pooling, softmax and batch-norm (inference)."""
from __future__ import annotations

from vdla.driver.host_ops.window_bounds import padding_dominates

from .. import te
from ..tir import expr as E
from ..tir import dtype as dt
from . import tags
from .conv import _pair, _pads, out_size
from .elemwise import broadcast_shape
from .transform import pad


DENSE_LANES = 16


def dense(x, weight, bias=None, out_dtype=None):
    """x [M, K] @ weight[N, K]^T (+ bias [N]) -> [M, N] (ONNX Gemm with transB=1).

    For float inputs with K a multiple of 16, the reduction is split in two stages so both
    operands are read contiguously in vectors: partial[m, n, l] = sum over k = l (mod 16),
    then out[m, n] = sum_l partial[m, n, l] (a "row-factored" reduction)."""
    m, k = x.shape
    n, k2 = weight.shape
    if k != k2:
        raise ValueError(f"dense: x {list(x.shape)} and weight {list(weight.shape)} disagree on K")
    acc = out_dtype or ("int32" if dt.is_int(x.dtype) else x.dtype)
    L = DENSE_LANES
    if dt.is_float(acc) and k % L == 0 and k >= 4 * L:
        ko = te.reduce_axis((0, k // L), "ko")
        partial = te.compute((m, n, L), lambda i, j, l: te.sum(
            te.cast(acc, x(i, ko.var * L + l)) * te.cast(acc, weight(j, ko.var * L + l)), axis=ko),
            name="dense_partial", tag=tags.DENSE_PARTIAL)
        r = te.reduce_axis((0, L), "l")
        out = te.compute((m, n), lambda i, j: te.sum(partial(i, j, r.var), axis=r), name="dense", tag=tags.DENSE)
    else:
        r = te.reduce_axis((0, k), "k")
        out = te.compute((m, n), lambda i, j: te.sum(te.cast(acc, x(i, r.var)) * te.cast(acc, weight(j, r.var)),
                                                     axis=r), name="dense", tag=tags.DENSE)
    if bias is not None:
        out = te.compute((m, n), lambda i, j: out(i, j) + bias(j), name="bias_add", tag=tags.BROADCAST)
    return out


def matmul(a, b, out_dtype=None):
    """numpy matmul semantics for >= 2-D inputs (leading batch dims broadcast)."""
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"matmul: inputs must be at least 2-D, got {list(a.shape)} and {list(b.shape)}")
    (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: {list(a.shape)} @ {list(b.shape)}: inner dimensions differ")
    batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
    acc = out_dtype or ("int32" if dt.is_int(a.dtype) else a.dtype)
    r = te.reduce_axis((0, k), "k")
    nb = len(batch)

    def bidx(t, i):
        off = nb - (t.ndim - 2)
        return [0 if t.shape[q] == 1 else i[q + off] for q in range(t.ndim - 2)]

    def f(*i):
        bi, row, col = i[:nb], i[nb], i[nb + 1]
        return te.sum(te.cast(acc, a(*bidx(a, bi), row, r.var)) * te.cast(acc, b(*bidx(b, bi), r.var, col)), axis=r)
    return te.compute(tuple(batch) + (m, n), f, name="matmul", tag=tags.MATMUL)


def matmul_panels(a, w):
    """a [rows, K] @ w stored as [N / P, K, P] panels (each P-column slice of the weight
    contiguous) -> [rows, N]: the matmul schedule's column vectors read whole panel rows."""
    (m, k), (panels, k2, width) = a.shape, w.shape
    if k != k2:
        raise ValueError(f"matmul_panels: {list(a.shape)} @ panels {list(w.shape)}: inner dimensions differ")
    r = te.reduce_axis((0, k), "k")
    return te.compute((m, panels * width), lambda i, j: te.sum(a(i, r.var) * w(j // width, r.var, j % width), axis=r),
                      name="matmul", tag=tags.MATMUL)


def _spatial(x, layout):
    """(H, W) and a function (batch/channel indices, y, x) -> full index, for a layout."""
    if layout == "NCHW":
        n, c, h, w = x.shape
        return (h, w), (n, c), lambda outer, y, z: (outer[0], outer[1], y, z)
    if layout == "NCHWc":
        n, cb, h, w, b = x.shape
        return (h, w), (n, cb, b), lambda outer, y, z: (outer[0], outer[1], y, z, outer[2])
    raise ValueError(f"pooling: unknown layout {layout!r}; expected 'NCHW' or 'NCHWc'")


def _out_shape(outer, oh, ow, layout):
    return (outer[0], outer[1], oh, ow) if layout == "NCHW" else (outer[0], outer[1], oh, ow, outer[2])


def _split_index(i, layout):
    """output index -> (outer indices, y, x)"""
    if layout == "NCHW":
        return (i[0], i[1]), i[2], i[3]
    return (i[0], i[1], i[4]), i[2], i[3]


def _pool(x, kernel, strides, pads, dilations, kind, count_include_pad, ceil_mode, layout):
    (h, w), outer, at = _spatial(x, layout)
    kh, kw = _pair(kernel)
    sh, sw = _pair(strides if strides is not None else 1)
    dh, dw = _pair(dilations)
    pt, pl, pb, pr = _pads(pads)
    oh, ow = out_size(h, kh, sh, pt, pb, dh), out_size(w, kw, sw, pl, pr, dw)
    if ceil_mode:
        # ONNX ceil_mode: extra windows at the end that start inside the (left-)padded input
        oh = -(-(h + pt + pb - dh * (kh - 1) - 1) // sh) + 1
        ow = -(-(w + pl + pr - dw * (kw - 1) - 1) // sw) + 1
        if (oh - 1) * sh >= h + pt:
            oh -= 1
        if (ow - 1) * sw >= w + pl:
            ow -= 1
    # pad enough on the high side for ceil_mode windows, with -inf (max) or 0 (avg)
    need_b = max(pb, (oh - 1) * sh + dh * (kh - 1) + 1 - h - pt)
    need_r = max(pr, (ow - 1) * sw + dw * (kw - 1) + 1 - w - pl)
    lowest = float("-inf") if dt.is_float(x.dtype) else dt.int_range(x.dtype)[0]
    fill = lowest if kind == "max" else 0
    shape = _out_shape(outer, oh, ow, layout)
    if padding_dominates((h, w), (pt, pl), (need_b, need_r)):
        # a window far wider than the data (a 200000-square MaxPool on 2 x 2): reduce over the
        # input, each tap kept where this window covers it, not over the window's padding
        ry, rx = te.reduce_axis((0, h), "ry"), te.reduce_axis((0, w), "rx")

        def window(i):
            o, y, z = _split_index(i, layout)
            covered = E.And(_covers(ry.var, y, sh, pt, kh, dh), _covers(rx.var, z, sw, pl, kw, dw))
            return E.Select(covered, x(*at(o, ry.var, rx.var)), E.Const(fill, x.dtype))
    else:
        before = [0, 0, pt, pl] + ([0] if layout == "NCHWc" else [])
        after = [0, 0, need_b, need_r] + ([0] if layout == "NCHWc" else [])
        padded = pad(x, before, after, fill, name="pad_pool")
        ry = te.reduce_axis((0, kh), "ry")
        rx = te.reduce_axis((0, kw), "rx")

        def window(i):
            o, y, z = _split_index(i, layout)
            return padded(*at(o, y * sh + ry.var * dh, z * sw + rx.var * dw))
    if kind == "max":
        return te.compute(shape, lambda *i: te.max(window(i), axis=[ry, rx]), name="max_pool2d", tag=tags.POOL)
    if not dt.is_float(x.dtype):
        raise TypeError(f"avg_pool2d needs a float input, got {x.dtype}")
    s = te.compute(shape, lambda *i: te.sum(window(i), axis=[ry, rx]), name="avg_pool_sum", tag=tags.POOL)
    if count_include_pad:
        # windows are clipped to the explicitly padded area (ceil_mode overhang excluded)
        def cnt(y, lo, hi, k, st, d, size):
            start = y * st
            end = E.min_expr(start + (k - 1) * d + 1, E.to_expr(size + lo + hi, "int32"))
            return (end - start + (d - 1)) // d
    else:
        def cnt(y, lo, hi, k, st, d, size):
            # number of taps k' with lo <= y*st + k'*d < lo + size
            first = E.max_expr(E.to_expr(0, "int32"), (lo - y * st + d - 1) // d)
            last = E.min_expr(E.to_expr(k - 1, "int32"), (lo + size - 1 - y * st) // d)
            return last - first + 1

    def avg(*i):
        _, y, z = _split_index(i, layout)
        return s(*i) / te.cast(x.dtype, cnt(y, pt, pb, kh, sh, dh, h) * cnt(z, pl, pr, kw, sw, dw, w))
    return te.compute(shape, avg, name="avg_pool2d", tag=tags.ELEMWISE)


def _covers(row, y, stride, pad_begin, kernel, dilation):
    """Whether output position y's window has a tap on input `row`."""
    offset = row + pad_begin - y * stride          # from the window's first tap
    inside = E.And(offset >= 0, offset <= (kernel - 1) * dilation)
    return E.And(inside, E.EQ(E.FloorMod(offset, E.to_expr(dilation, "int32")), E.to_expr(0, "int32"))) \
        if dilation > 1 else inside


def max_pool2d(x, kernel, strides=None, pads=0, dilations=1, ceil_mode=False, layout="NCHW"):
    """ONNX MaxPool; pads [top, left, bottom, right]; layout "NCHW" or "NCHWc" ([N, C/b, H, W, b])."""
    return _pool(x, kernel, strides, pads, dilations, "max", False, ceil_mode, layout)


def avg_pool2d(x, kernel, strides=None, pads=0, count_include_pad=False, ceil_mode=False, layout="NCHW"):
    """ONNX AveragePool; layout "NCHW" or "NCHWc"."""
    return _pool(x, kernel, strides, pads, 1, "avg", count_include_pad, ceil_mode, layout)


def _global(x, layout, combiner, name):
    (h, w), outer, at = _spatial(x, layout)
    ry, rx = te.reduce_axis((0, h), "ry"), te.reduce_axis((0, w), "rx")
    reducer = te.sum if combiner == "sum" else te.max
    shape = _out_shape(outer, 1, 1, layout)
    return te.compute(shape, lambda *i: reducer(x(*at(_split_index(i, layout)[0], ry.var, rx.var)),
                                                axis=[ry, rx]), name=name, tag=tags.POOL)


def global_avg_pool2d(x, layout="NCHW"):
    (h, w), _, _ = _spatial(x, layout)
    s = _global(x, layout, "sum", "global_pool_sum")
    return te.compute(s.shape, lambda *i: s(*i) * E.Const(1.0 / (h * w), x.dtype),
                      name="global_avg_pool2d", tag=tags.ELEMWISE)


def global_max_pool2d(x, layout="NCHW"):
    return _global(x, layout, "max", "global_max_pool2d")


def softmax(x, axis=-1, lanes: int | None = None, log: bool = False):
    """exp(x - max) / sum(exp(x - max)) along one axis (ONNX Softmax, opset >= 13); log=True:
    (x - max) - log(sum(exp(x - max))) (LogSoftmax), the log taken once per row (softmax_logsum)
    and never of an underflowed quotient. lanes: over the last axis, reduce each row in that
    many vector lanes first (the CPU's form, _softmax_rows), where the row holds at least two
    such vectors; None: one reduction per row."""
    axis = axis % x.ndim
    k1 = te.reduce_axis((0, x.shape[axis]), "k1")
    k2 = te.reduce_axis((0, x.shape[axis]), "k2")
    red_shape = [s for q, s in enumerate(x.shape) if q != axis] or [1]

    def at(i, r):
        i = list(i)
        return i[:axis] + [r] + i[axis:]
    keep = lambda i: [] if x.ndim == 1 else list(i)  # noqa: E731
    if x.ndim == 1:
        mx = te.compute([1], lambda z: te.fmax(x(k1.var), axis=k1), name="softmax_max", tag=tags.SOFTMAX)
        ex = te.compute(x.shape, lambda i: _exp_below_max(x(i) - mx(0)), name="softmax_exp",
                        tag=tags.SOFTMAX)
        sm = te.compute([1], lambda z: te.sum(ex(k2.var), axis=k2), name="softmax_sum", tag=tags.SOFTMAX)
        if log:
            ls = _logsum(sm, [1], None)
            return te.compute(x.shape, lambda i: (x(i) - mx(0)) - ls(0), name="log_softmax", tag=tags.SOFTMAX)
        return te.compute(x.shape, lambda i: _over(ex(i), sm(0)), name="softmax", tag=tags.SOFTMAX)
    if lanes is not None and axis == x.ndim - 1 and x.shape[axis] >= 2 * lanes:
        return _softmax_rows(x, lanes, log)
    # attrs: the axis, for schedule_cpu's row-at-a-time softmax schedule
    mx = te.compute(red_shape, lambda *i: te.fmax(x(*at(keep(i), k1.var)), axis=k1), name="softmax_max",
                    tag=tags.SOFTMAX, attrs={"axis": axis})
    drop = lambda i: [v for q, v in enumerate(i) if q != axis]  # noqa: E731
    ex = te.compute(x.shape, lambda *i: _exp_below_max(x(*i) - mx(*drop(i))), name="softmax_exp",
                    tag=tags.SOFTMAX, attrs={"axis": axis})
    sm = te.compute(red_shape, lambda *i: te.sum(ex(*at(keep(i), k2.var)), axis=k2), name="softmax_sum",
                    tag=tags.SOFTMAX, attrs={"axis": axis})
    if log:
        ls = _logsum(sm, red_shape, axis)
        return te.compute(x.shape, lambda *i: (x(*i) - mx(*drop(i))) - ls(*drop(i)), name="log_softmax",
                          tag=tags.SOFTMAX, attrs={"axis": axis})
    return te.compute(x.shape, lambda *i: _over(ex(*i), sm(*drop(i))), name="softmax", tag=tags.SOFTMAX,
                      attrs={"axis": axis})


def _exp_below_max(v):
    """exp of an element less its row's max: never positive (NaN where the row has one), which
    the code generator's exp_nonpositive exploits."""
    return te.call("exp_nonpositive", v)


def _over(e, row_sum):
    """e / row_sum as e times the row's reciprocal, which LLVM hoists out of the row: a division
    per vector cost a 197-key row ~90 cycles (and onnxruntime multiplies too)."""
    return e * (E.Const(1.0, e.dtype) / row_sum)


def _logsum(sm, shape, axis):
    """log(sum of exp(x - max)) per row. LogSoftmax takes max, then this, from x: max + log(sum)
    first would round at max's magnitude (an ulp of 1e4 is 1e-3)."""
    return te.compute(list(shape), lambda *i: te.log(sm(*i)), name="softmax_logsum", tag=tags.SOFTMAX,
                      attrs={} if axis is None else {"axis": axis})


def _lane_reduce(term, lead: tuple, length: int, lanes: int, reducer, identity, name: str,
                 idempotent: bool = False):
    """reducer over each row of `length` as partials over `lanes` interleaved slices of the row
    (the partial's lane axis vectorizes), then over the lanes. A row the lanes do not divide
    reads its last slice through a select, which the code generator guards (a masked load);
    for an idempotent reducer (max) the last slice is instead the row's last `lanes` elements,
    overlapping the slice before it: plain loads."""
    ko = te.reduce_axis((0, -(-length // lanes)), "ko")

    def slice_term(i):
        if idempotent and length % lanes:
            return term(i[:-1], E.min_expr(ko.var * lanes, E.Const(length - lanes, ko.var.dtype)) + i[-1])
        j = ko.var * lanes + i[-1]
        value = term(i[:-1], j)
        if length % lanes == 0:
            return value
        return E.Select(j < length, value, E.to_expr(identity, value.dtype))
    partial = te.compute(lead + (lanes,), lambda *i: reducer(slice_term(i), axis=ko), name=f"{name}_partial",
                         tag=tags.SOFTMAX, attrs={"axis": len(lead), "lanes": True})
    lane = te.reduce_axis((0, lanes), "lane")
    return te.compute(lead, lambda *i: reducer(partial(*i, lane.var), axis=lane), name=name, tag=tags.SOFTMAX,
                      attrs={"axis": len(lead)})


def _softmax_rows(x, lanes: int, log: bool = False):
    """Softmax over the last axis with the row max and sum reduced in vector lanes (a sum of
    one scalar chain per row waits on every add: a ViT's 197-key rows spent half their time
    there). The exponentials fill a row padded with zeros to whole slices: its last partial
    vector is computed with masked loads instead of one libm call per element, and the sum
    reads whole slices."""
    lead, length = tuple(x.shape[:-1]), x.shape[-1]
    axis = x.ndim - 1
    mx = _lane_reduce(lambda r, j: x(*r, j), lead, length, lanes, te.fmax, float("-inf"), "softmax_max",
                      idempotent=True)
    padded = -(-length // lanes) * lanes

    def exp_or_pad(*i):
        e = _exp_below_max(x(*i) - mx(*i[:-1]))
        return e if padded == length else E.Select(i[-1] < length, e, E.Const(0.0, x.dtype))
    ex = te.compute(lead + (padded,), exp_or_pad, name="softmax_exp", tag=tags.SOFTMAX, attrs={"axis": axis})
    sm = _lane_reduce(lambda r, j: ex(*r, j), lead, padded, lanes, te.sum, 0.0, "softmax_sum")
    if log:
        ls = _logsum(sm, lead, axis)
        return te.compute(x.shape, lambda *i: (x(*i) - mx(*i[:-1])) - ls(*i[:-1]), name="log_softmax",
                          tag=tags.SOFTMAX, attrs={"axis": axis})
    return te.compute(x.shape, lambda *i: _over(ex(*i), sm(*i[:-1])), name="softmax", tag=tags.SOFTMAX,
                      attrs={"axis": axis})


def batch_norm_inference(x, gamma, beta, mean, var, epsilon=1e-5, axis=1):
    """(x - mean) / sqrt(var + eps) * gamma + beta, per channel along `axis`."""
    def f(*i):
        c = i[axis]
        scale = gamma(c) / te.sqrt(var(c) + E.to_expr(epsilon, x.dtype))
        return (x(*i) - mean(c)) * scale + beta(c)
    return te.compute(x.shape, f, name="batch_norm", tag=tags.BROADCAST)
