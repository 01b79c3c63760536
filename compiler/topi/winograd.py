"""3x3 stride-1 convolution by Winograd's F(2x2, 3x3), blocked layout NCHWc, as a kernel.

The transforms are those of vdla.driver.host_ops.winograd (which also holds the compile-time
filter transform and the op's numpy semantics). The filter transform U = G g G^T runs at
compile time; the kernel runs three stages:

    V[n, ic/cb, th, e, u, tw, cb]   = (B^T d B)[e, u]                       input transform
    M[n, oc/ob, th, e, u, tw, ob]   = sum over ic of V[.., ic] * U[e, u, .., ic, oc]   GEMM
    out[n, oc/ob, y, x, ob]         = (A^T M A)[y % 2, x % 2] of tile (y // 2, x // 2)

A transform row is a select chain over the row index; once the schedule unrolls that index,
the simplifier leaves the plain sums and differences (no multiplies by 0 or 1).
"""
from __future__ import annotations

from vdla.driver.host_ops.winograd import ALPHA, AT, BT, TILE, padded_size, tiles

from .. import te
from . import tags
from .conv import _pads, out_size
from .transform import pad


def _combination(row, f):
    """sum_k row[k] * f(k), written as the positive terms added, then the negative ones
    subtracted (unit coefficients need no multiply)."""
    terms = [(c, f(k) if abs(c) == 1 else f(k) * float(abs(c))) for k, c in enumerate(row) if c]
    positive = [t for c, t in terms if c > 0]
    if not positive:
        raise ValueError(f"Winograd transform row {list(row)} has no positive coefficient")
    out = positive[0]
    for t in positive[1:]:
        out = out + t
    for c, t in terms:
        if c < 0:
            out = out - t
    return out


def _apply_row(matrix, i, f):
    """(matrix @ [f(0), f(1), ...])[i] for an index expression i."""
    expr = _combination(matrix[-1], f)
    for k in range(len(matrix) - 2, -1, -1):
        expr = te.if_then_else(i.equal(k), _combination(matrix[k], f), expr)
    return expr


def conv2d_nchwc_winograd(data, u, pads=0):
    """data [N, C/cb, H, W, cb], u = host_ops.winograd.transform_weight(...)
    [4, 4, OC/ob, C/cb, cb, ob]
    -> [N, OC/ob, OH, OW, ob]; a 3x3 filter, stride 1, dilation 1."""
    n, cbo, h, w, cb = data.shape
    a1, a2, obo, cbo2, cb2, ob = u.shape
    if (a1, a2) != (ALPHA, ALPHA) or (cbo2, cb2) != (cbo, cb):
        raise ValueError(f"conv2d_nchwc_winograd: transformed weight {list(u.shape)} does not "
                         f"match data {list(data.shape)}; expected [4, 4, OC/ob, {cbo}, {cb}, ob]")
    if data.dtype != "float32" or u.dtype != "float32":
        raise TypeError(f"conv2d_nchwc_winograd: float32 only, got {data.dtype} and {u.dtype}")
    pt, pl, pb, pr = _pads(pads)
    oh, ow = out_size(h, 3, 1, pt, pb, 1), out_size(w, 3, 1, pl, pr, 1)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"conv2d_nchwc_winograd: output would be {oh}x{ow}")
    th, tw = tiles(oh), tiles(ow)
    # whole tiles: pad the bottom/right out to what the last tiles read (at least the model's pads)
    d = pad(data, [0, 0, pt, pl, 0], [0, 0, padded_size(th) - h - pt, padded_size(tw) - w - pl, 0],
            0, name="pad_data")
    v = te.compute((n, cbo, th, ALPHA, ALPHA, tw, cb),
                   lambda b, c, ty, e, v_, tx, ci: _apply_row(BT, e, lambda r: _apply_row(
                       BT, v_, lambda s: d(b, c, TILE * ty + r, TILE * tx + s, ci))),
                   name="winograd_input", tag=tags.WINOGRAD_INPUT)
    ico = te.reduce_axis((0, cbo), "ico")
    ici = te.reduce_axis((0, cb), "ici")
    m = te.compute((n, obo, th, ALPHA, ALPHA, tw, ob),
                   lambda b, o, ty, e, v_, tx, oc: te.sum(
                       v(b, ico.var, ty, e, v_, tx, ici.var) * u(e, v_, o, ico.var, ici.var, oc),
                       axis=[ico, ici]),
                   name="winograd_gemm", tag=tags.WINOGRAD_GEMM)
    return te.compute((n, obo, oh, ow, ob),
                      lambda b, o, y, x, oc: _apply_row(AT, y % TILE, lambda e: _apply_row(
                          AT, x % TILE, lambda v_: m(b, o, y // TILE, e, v_, x // TILE, oc))),
                      name="conv2d_nchwc_winograd", tag=tags.WINOGRAD_OUTPUT)
