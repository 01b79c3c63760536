"""2-D convolution: NCHW (any groups, depthwise included) and the blocked NCHWc layout.

Attribute meanings follow ONNX Conv: strides (sh, sw), pads [top, left, bottom, right],
dilations (dh, dw), group. Integer inputs (int8/uint8) accumulate in `out_dtype` (int32 by
default); float inputs accumulate in their own type.
"""
from __future__ import annotations

from .. import te
from ..intrin.cpu import SIGNED_OFFSET, offset_activation
from ..tir import dtype as dt
from . import tags
from .transform import pad


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _pads(p):
    if isinstance(p, int):
        return (p, p, p, p)
    p = tuple(p)
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    if len(p) != 4:
        raise ValueError(f"conv2d: pads must be [top, left, bottom, right], got {list(p)}")
    return p


def out_size(n, k, stride, pad_lo, pad_hi, dilation):
    return (n + pad_lo + pad_hi - dilation * (k - 1) - 1) // stride + 1


def _acc_dtype(data, weight, out_dtype):
    if data.dtype != weight.dtype:
        raise TypeError(f"conv2d: data is {data.dtype} but weight is {weight.dtype}")
    if out_dtype is None:
        out_dtype = "int32" if dt.is_int(data.dtype) else data.dtype
    return out_dtype


def _window(op, data, kh, kw, strides, pads, dilations):
    """The window of a convolution over `data` whose axes 2 and 3 are H and W (NCHW or
    NCHWc): strides, dilations, output size, and the data zero-padded."""
    sh, sw = _pair(strides)
    dh, dw = _pair(dilations)
    pt, pl, pb, pr = _pads(pads)
    oh = out_size(data.shape[2], kh, sh, pt, pb, dh)
    ow = out_size(data.shape[3], kw, sw, pl, pr, dw)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: a {kh}x{kw} window over {list(data.shape)} with pads "
                         f"{[pt, pl, pb, pr]} gives a {oh}x{ow} output")
    inner = [0] * (len(data.shape) - 4)
    padded = pad(data, [0, 0, pt, pl, *inner], [0, 0, pb, pr, *inner], 0, name="pad_data")
    return padded, (sh, sw), (dh, dw), (oh, ow)


def conv2d_nchw(data, weight, strides=1, pads=0, dilations=1, groups=1, out_dtype=None):
    """data [N, C, H, W], weight [OC, C/groups, KH, KW] -> [N, OC, OH, OW]."""
    n, c, _, _ = data.shape
    oc, cg, kh, kw = weight.shape
    if c % groups or oc % groups or c // groups != cg:
        raise ValueError(f"conv2d_nchw: {c} input channels, {oc} output channels and weight "
                         f"{list(weight.shape)} do not fit groups={groups}")
    acc = _acc_dtype(data, weight, out_dtype)
    padded, (sh, sw), (dh, dw), (oh, ow) = _window("conv2d_nchw", data, kh, kw, strides, pads, dilations)
    rc = te.reduce_axis((0, cg), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    opg = oc // groups

    def f(b, o, y, x):
        ch = rc.var if groups == 1 else (o // opg) * cg + rc.var
        a = padded(b, ch, y * sh + ry.var * dh, x * sw + rx.var * dw)
        wv = weight(o, rc.var, ry.var, rx.var)
        return te.sum(te.cast(acc, a) * te.cast(acc, wv), axis=[rc, ry, rx])
    return te.compute((n, oc, oh, ow), f, name="conv2d_nchw", tag=tags.CONV2D_NCHW,
                      attrs={"strides": (sh, sw), "groups": groups})


def conv2d_nchwc(data, weight, strides=1, pads=0, dilations=1, out_dtype=None, groups=1):
    """Blocked layout: data [N, C/cb, H, W, cb], weight [OC/ob, C/groups/cb, KH, KW, cb, ob]
    -> [N, OC/ob, OH, OW, ob]. The inner output block `ob` is contiguous, so a vector of ob
    lanes accumulates ob output channels at once. With groups, each group's channels are whole
    blocks: output block o reads the input blocks of group o // (OC/ob/groups)."""
    n, cbo, _, _, cb = data.shape
    obo, cbo2, kh, kw, cb2, ob = weight.shape
    if groups < 1 or cbo % groups or obo % groups:
        raise ValueError(f"conv2d_nchwc: groups={groups} does not split data {list(data.shape)} and weight "
                         f"{list(weight.shape)} into whole channel blocks")
    if cbo2 * groups != cbo or cb2 != cb:
        raise ValueError(f"conv2d_nchwc: data {list(data.shape)} and weight {list(weight.shape)} "
                         f"disagree on the input-channel blocking (groups={groups})")
    acc = _acc_dtype(data, weight, out_dtype)
    padded, (sh, sw), (dh, dw), (oh, ow) = _window("conv2d_nchwc", data, kh, kw, strides, pads, dilations)
    ico = te.reduce_axis((0, cbo2), "ico")
    ici = te.reduce_axis((0, cb), "ici")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    out_per_group = obo // groups

    def f(b, oco, y, x, oci):
        block = ico.var if groups == 1 else oco // out_per_group * cbo2 + ico.var
        a = padded(b, block, y * sh + ry.var * dh, x * sw + rx.var * dw, ici.var)
        wv = weight(oco, ico.var, ry.var, rx.var, ici.var, oci)
        return te.sum(te.cast(acc, a) * te.cast(acc, wv), axis=[ico, ry, rx, ici])
    return te.compute((n, obo, oh, ow, ob), f, name="conv2d_nchwc", tag=tags.CONV2D_NCHWC,
                      attrs={"strides": (sh, sw), "groups": groups})


def depthwise_conv2d_nchwc(data, weight, strides=1, pads=0, dilations=1, out_dtype=None):
    """data [N, C/cb, H, W, cb], weight [C/cb, 1, KH, KW, 1, cb] -> [N, C/cb, OH, OW, cb]."""
    n, cbo, _, _, cb = data.shape
    wo, one, kh, kw, one2, wb = weight.shape
    if (wo, one, one2, wb) != (cbo, 1, 1, cb):
        raise ValueError(f"depthwise_conv2d_nchwc: weight {list(weight.shape)} does not match data "
                         f"{list(data.shape)}; expected [{cbo}, 1, KH, KW, 1, {cb}]")
    acc = _acc_dtype(data, weight, out_dtype)
    padded, (sh, sw), (dh, dw), (oh, ow) = _window("depthwise_conv2d_nchwc", data, kh, kw,
                                                   strides, pads, dilations)
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")

    def f(b, co, y, x, ci):
        a = padded(b, co, y * sh + ry.var * dh, x * sw + rx.var * dw, ci)
        return te.sum(te.cast(acc, a) * te.cast(acc, weight(co, 0, ry.var, rx.var, 0, ci)), axis=[ry, rx])
    return te.compute((n, cbo, oh, ow, cb), f, name="depthwise_conv2d_nchwc", tag=tags.DEPTHWISE_NCHWC,
                      attrs={"strides": (sh, sw)})


def pack_weight_nchwc(weight, cb, ob):
    """[OC, C, KH, KW] -> [OC/ob, C/cb, KH, KW, cb, ob] (for conv2d_nchwc)."""
    oc, c, kh, kw = weight.shape
    return te.compute((oc // ob, c // cb, kh, kw, cb, ob),
                      lambda o, i, y, x, ii, oi: weight(o * ob + oi, i * cb + ii, y, x),
                      name="pack_weight", tag=tags.INJECTIVE)


def pack_depthwise_weight_nchwc(weight, cb):
    """[C, 1, KH, KW] -> [C/cb, 1, KH, KW, 1, cb] (for depthwise_conv2d_nchwc)."""
    c, _, kh, kw = weight.shape
    return te.compute((c // cb, 1, kh, kw, 1, cb),
                      lambda o, a, y, x, b, ci: weight(o * cb + ci, 0, y, x),
                      name="pack_dw_weight", tag=tags.INJECTIVE)


def _check_weight_sums(op, weight_sums, blocks):
    if tuple(weight_sums.shape) != (blocks, 16) or weight_sums.dtype != "int32":
        raise ValueError(f"{op}: weight_sums must be int32 [{blocks}, 16], got "
                         f"{weight_sums.dtype}{list(weight_sums.shape)}")


def conv2d_nchwc_int8(data, weight, strides=1, pads=0, dilations=1, weight_sums=None):
    """uint8 activations x int8 weights -> int32, blocked for 4-way int8 dot products:
    data [N, C/cb, H, W, cb] uint8, weight [OC/16, C/cb, KH, KW, cb/4, 16, 4] int8
    (4 consecutive input channels innermost) -> [N, OC/16, OH, OW, 16] int32.
    weight_sums ([OC/16, 16] int32, each output channel's sum of weights, none of them -128):
    the products take x - 128 as signed bytes (signed_products) for the same result."""
    n, cbo, _, _, cb = data.shape
    obo, cbo2, kh, kw, cq, ob, four = weight.shape
    if data.dtype != "uint8" or weight.dtype != "int8":
        raise TypeError(f"conv2d_nchwc_int8: expected uint8 data and int8 weights, got {data.dtype}, {weight.dtype}")
    if (cbo2, cq * 4, four, ob) != (cbo, cb, 4, 16):
        raise ValueError(f"conv2d_nchwc_int8: weight {list(weight.shape)} does not match data {list(data.shape)}; "
                         f"expected [OC/16, {cbo}, KH, KW, {cb // 4}, 16, 4]")
    padded, (sh, sw), (dh, dw), (oh, ow) = _window("conv2d_nchwc_int8", data, kh, kw, strides, pads, dilations)
    ico = te.reduce_axis((0, cbo), "ico")
    icq = te.reduce_axis((0, cq), "icq")
    ic4 = te.reduce_axis((0, 4), "ic4")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")

    offset = 0 if weight_sums is None else SIGNED_OFFSET

    def f(b, oco, y, x, oci):
        a = padded(b, ico.var, y * sh + ry.var * dh, x * sw + rx.var * dw, icq.var * 4 + ic4.var)
        wv = weight(oco, ico.var, ry.var, rx.var, icq.var, oci, ic4.var)
        return te.sum(offset_activation(a, offset) * te.cast("int32", wv), axis=[ico, ry, rx, icq, ic4])
    acc = te.compute((n, obo, oh, ow, 16), f, name="conv2d_nchwc_int8", tag=tags.CONV2D_NCHWC_INT8,
                     attrs={"strides": (sh, sw), "dilations": (dh, dw), "activation_offset": offset})
    if weight_sums is None:
        return acc
    _check_weight_sums("conv2d_nchwc_int8", weight_sums, obo)
    return te.compute(acc.shape, lambda b, o, y, x, l: acc(b, o, y, x, l) + weight_sums(o, l) * SIGNED_OFFSET,
                      name="conv2d_nchwc_int8_offset", tag=tags.INJECTIVE)


def matmul_int8_panels(data, weight, weight_sums=None):
    """uint8 [rows, K] x int8 [N/16, K/4, 16, 4] (four consecutive k innermost) -> int32
    [rows, N/16, 16]: the int8 blocked convolution's dot products with rows for pixels (a 1x1
    convolution of an NHWC image), written in the rows' own layout. weight_sums as for
    conv2d_nchwc_int8 ([N/16, 16], each column's sum)."""
    rows, k = data.shape
    nb, kq, lanes, four = weight.shape
    if data.dtype != "uint8" or weight.dtype != "int8":
        raise TypeError(f"matmul_int8_panels: expected uint8 data and int8 weights, got {data.dtype}, {weight.dtype}")
    if (kq * four, lanes, four) != (k, 16, 4):
        raise ValueError(f"matmul_int8_panels: weight {list(weight.shape)} does not match data {list(data.shape)}; "
                         f"expected [N/16, {k // 4}, 16, 4]")
    kqo = te.reduce_axis((0, kq), "kq")
    k4 = te.reduce_axis((0, 4), "k4")
    offset = 0 if weight_sums is None else SIGNED_OFFSET
    acc = te.compute((rows, nb, 16), lambda m, o, oi: te.sum(
        offset_activation(data(m, kqo.var * 4 + k4.var), offset) * te.cast("int32", weight(o, kqo.var, oi, k4.var)),
        axis=[kqo, k4]), name="matmul_int8_panels", tag=tags.MATMUL_INT8, attrs={"activation_offset": offset})
    if weight_sums is None:
        return acc
    _check_weight_sums("matmul_int8_panels", weight_sums, nb)
    return te.compute(acc.shape, lambda m, o, l: acc(m, o, l) + weight_sums(o, l) * SIGNED_OFFSET,
                      name="matmul_int8_panels_offset", tag=tags.INJECTIVE)


def pack_weight_nchwc_int8(weight, cb):
    """[OC, C, KH, KW] int8 -> [OC/16, C/cb, KH, KW, cb/4, 16, 4] (for conv2d_nchwc_int8)."""
    oc, c, kh, kw = weight.shape
    return te.compute((oc // 16, c // cb, kh, kw, cb // 4, 16, 4),
                      lambda o, i, y, x, q, oi, k: weight(o * 16 + oi, i * cb + q * 4 + k, y, x),
                      name="pack_weight_int8", tag=tags.INJECTIVE)


def conv2d_int8(data, weight, strides=1, pads=0, dilations=1, groups=1):
    """int8 x int8 -> int32 NCHW convolution (layers that fall back from the accelerator)."""
    if data.dtype not in ("int8", "uint8") or weight.dtype not in ("int8", "uint8"):
        raise TypeError(f"conv2d_int8: expected int8 inputs, got {data.dtype} and {weight.dtype}")
    return conv2d_nchw(data, weight, strides, pads, dilations, groups, out_dtype="int32")
