"""3x3 stride-1 convolution by Winograd's F(m x m, 3x3) (m = 2 or 4), blocked layout NCHWc, as
a kernel.

The transforms are those of vdla.driver.host_ops.winograd (which also holds the compile-time
filter transform and the op's numpy semantics); which one is U's first extent (the patch edge
alpha = m + 2). The filter transform U = G g G^T runs at compile time; the kernel runs three
stages:

    V[n, th, e, u, ic/cb, tw, cb]   = (B^T d B)[e, u]                       input transform
    M[n, oc/ob, th, e, u, tw, ob]   = sum over ic of V[.., ic] * U[e, u, .., ic, oc]   GEMM
    out[n, oc/ob, y, x, ob]         = (A^T M A)[y % m, x % m] of tile (y // m, x // m)

V keeps the input-channel blocks inside (row of tiles, e, u): what one GEMM register tile reads
over its whole reduction is one contiguous run (7 KB for 256 channels and 7 tiles), not one
block's tiles every 50 KB (the GEMM of F(2x2) at 14x14 with 256 channels, alone on aligned
buffers, on the Intel Xeon: 65.8 -> 71.2 GMAC/s).

A transform row is a select chain over the row index; once the schedule unrolls that index,
the simplifier leaves the plain sums and differences (no multiplies by 0 or 1).
"""
from __future__ import annotations

from vdla.driver.host_ops.winograd import TRANSFORMS

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


def conv2d_nchwc_winograd(data, u, pads=0, separable=True):
    """data [N, C/cb, H, W, cb], u = host_ops.winograd.transform_weight(...)
    [alpha, alpha, OC/ob, C/cb, cb, ob] (alpha 4: F(2x2, 3x3), 6: F(4x4, 3x3))
    -> [N, OC/ob, OH, OW, ob]; a 3x3 filter, stride 1, dilation 1. `separable`: each transform
    as two stages, one axis of the tile each (tagged WINOGRAD_HALF; the CPU schedule keeps the
    half-transformed tile in registers); False: one stage each, both axes in one expression."""
    n, cbo, h, w, cb = data.shape
    a1, a2, obo, cbo2, cb2, ob = u.shape
    t = next((t for t in TRANSFORMS.values() if (a1, a2) == (t.alpha, t.alpha)), None)
    if t is None or (cbo2, cb2) != (cbo, cb):
        alphas = " or ".join(str(t.alpha) for t in TRANSFORMS.values())
        raise ValueError(f"conv2d_nchwc_winograd: transformed weight {list(u.shape)} does not "
                         f"match data {list(data.shape)}; expected [alpha, alpha, OC/ob, {cbo}, {cb}, ob] "
                         f"with alpha {alphas}")
    if data.dtype != "float32" or u.dtype != "float32":
        raise TypeError(f"conv2d_nchwc_winograd: float32 only, got {data.dtype} and {u.dtype}")
    pt, pl, pb, pr = _pads(pads)
    oh, ow = out_size(h, 3, 1, pt, pb, 1), out_size(w, 3, 1, pl, pr, 1)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"conv2d_nchwc_winograd: output would be {oh}x{ow}")
    th, tw = t.tiles(oh), t.tiles(ow)
    # whole tiles: pad the bottom/right out to what the last tiles read (at least the model's pads)
    d = pad(data, [0, 0, pt, pl, 0], [0, 0, t.padded_size(th) - h - pt, t.padded_size(tw) - w - pl, 0],
            0, name="pad_data")
    # each transform one axis at a time (B^T d, then (B^T d) B): with the half-transformed patch
    # in registers no product of rows is formed twice (F(4x4): 0.30 -> 0.21 ms on a 56x56 layer)
    def rows_of(b, c, ty, r, v_, tx, ci):
        return _apply_row(t.bt, v_, lambda s: d(b, c, t.tile * ty + r, t.tile * tx + s, ci))
    if separable:
        rows_of = te.compute((n, cbo, th, t.alpha, t.alpha, tw, cb), rows_of, name="winograd_input_rows",
                             tag=tags.WINOGRAD_HALF)
    v = te.compute((n, th, t.alpha, t.alpha, cbo, tw, cb),
                   lambda b, ty, e, v_, c, tx, ci: _apply_row(t.bt, e, lambda r: rows_of(b, c, ty, r, v_, tx, ci)),
                   name="winograd_input", tag=tags.WINOGRAD_INPUT)
    ico = te.reduce_axis((0, cbo), "ico")
    ici = te.reduce_axis((0, cb), "ici")
    m = te.compute((n, obo, th, t.alpha, t.alpha, tw, ob),
                   lambda b, o, ty, e, v_, tx, oc: te.sum(
                       v(b, ty, e, v_, ico.var, tx, ici.var) * u(e, v_, o, ico.var, ici.var, oc),
                       axis=[ico, ici]),
                   name="winograd_gemm", tag=tags.WINOGRAD_GEMM)
    def cols(b, o, ty, e, xi, tx, oc):
        return _apply_row(t.at, xi, lambda v_: m(b, o, ty, e, v_, tx, oc))
    if separable:
        cols = te.compute((n, obo, th, t.alpha, t.tile, tw, ob), cols, name="winograd_output_cols",
                          tag=tags.WINOGRAD_HALF)
    return te.compute((n, obo, oh, ow, ob),
                      lambda b, o, y, x, oc: _apply_row(
                          t.at, y % t.tile, lambda e: cols(b, o, y // t.tile, e, x % t.tile, x // t.tile, oc)),
                      name="conv2d_nchwc_winograd", tag=tags.WINOGRAD_OUTPUT)
