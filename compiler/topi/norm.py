"""Layer normalization over the last axis, as one group of stages that schedule_for compiles into
one kernel (the way softmax is: row reductions, then an elementwise output).

The row sums are "row-factored" when the row length allows (as dense's reduction is): partial
sums over `lanes` interleaved slices of the row, partial[r, l] = sum_k x[r, k * lanes + l], whose
innermost data axis the generic schedule vectorizes, then a sum of the `lanes` partials. The
output stage is elementwise over the row and vectorized the same way."""
from __future__ import annotations

from .. import te
from ..tir import expr as E
from . import tags

ROW_LANES = (16, 8)


def _row_lanes(length: int) -> int | None:
    """The partial-sum width for rows of `length`: a vector that divides it, with at least two
    vectors per row (shorter rows are summed directly)."""
    return next((lanes for lanes in ROW_LANES if length % lanes == 0 and length >= 2 * lanes), None)


def _row_sum(term, lead: tuple, length: int, name: str):
    """sum_j term(row, j) over each row, as a tensor of shape lead + (1,)."""
    lanes = _row_lanes(length)
    if lanes is None:
        k = te.reduce_axis((0, length), "k")
        return te.compute(lead + (1,), lambda *i: te.sum(term(i[:-1], k.var), axis=k), name=name, tag=tags.REDUCE)
    ko = te.reduce_axis((0, length // lanes), "ko")
    partial = te.compute(lead + (lanes,), lambda *i: te.sum(term(i[:-1], ko.var * lanes + i[-1]), axis=ko),
                         name=f"{name}_partial", tag=tags.REDUCE)
    lane = te.reduce_axis((0, lanes), "lane")
    return te.compute(lead + (1,), lambda *i: te.sum(partial(*i[:-1], lane.var), axis=lane), name=name,
                      tag=tags.REDUCE)


def _param(p, j, dtype):
    """A scale or bias read at column j: a [D] or [1] tensor, a literal, or None (-> None)."""
    if p is None or not isinstance(p, te.Tensor):
        return None if p is None else E.to_expr(float(p), dtype)
    return p(j if p.shape[-1] != 1 else 0)


def layer_norm(x, gamma, beta=None, epsilon=1e-5):
    """ONNX LayerNormalization with axis = -1: (x - mean) * inv_std * gamma + beta per row, and
    the Mean and InvStdDev outputs (shape x.shape[:-1] + [1]). gamma and beta: [D] or [1]
    tensors, or literals; beta may be None. Returns (y, mean, inv_std)."""
    for name, p in (("gamma", gamma), ("beta", beta)):
        if isinstance(p, te.Tensor) and (p.ndim != 1 or p.shape[0] not in (1, x.shape[-1])):
            raise ValueError(f"layer_norm: {name} {list(p.shape)} must be [{x.shape[-1]}] or [1]")
    lead, length = tuple(x.shape[:-1]), x.shape[-1]
    inv_n = E.Const(1.0 / length, x.dtype)
    total = _row_sum(lambda r, j: x(*r, j), lead, length, "layer_norm_sum")
    mean = te.compute(lead + (1,), lambda *i: total(*i) * inv_n, name="layer_norm_mean", tag=tags.ELEMWISE)

    def squared_deviation(r, j):
        d = x(*r, j) - mean(*r, 0)
        return d * d
    sq = _row_sum(squared_deviation, lead, length, "layer_norm_sq")
    eps = E.to_expr(epsilon, x.dtype)
    # a one-element reduction: a stage of its own, so 1/sqrt runs once per row (an injective
    # stage would be inlined into the output and evaluated for every element)
    one = te.reduce_axis((0, 1), "one")
    inv_std = te.compute(lead + (1,), lambda *i: te.sum(E.Const(1.0, x.dtype) / te.sqrt(sq(*i) * inv_n + eps),
                                                        axis=one), name="layer_norm_inv_std", tag=tags.REDUCE)

    def out(*i):
        r, j = i[:-1], i[-1]
        y = (x(*i) - mean(*r, 0)) * inv_std(*r, 0) * _param(gamma, j, x.dtype)
        b = _param(beta, j, x.dtype)
        return y if b is None else y + b
    return te.compute(x.shape, out, name="layer_norm", tag=tags.BROADCAST), mean, inv_std
