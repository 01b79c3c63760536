"""VdlaMatMul: a batch of matrix products of two activations (attention's Q·Kᵀ and P·V) on the
GEMM core, and VdlaQuantizeWeights, the conversion that makes its second operand weights at run
time.

The first operand is a packed matrix holding the rows of all G products one after the other
((G*M/B, K/L, B, L), so the rows of an [..., M, K] tensor); the second is G packed weight
matrices (G, N/L, K/L, L, L), quantized on the CPU from the fp32 [..., K, N] tensor with one
step per output column (per key token for Kᵀ, per channel for V). Each product goes through
the dense epilogue with the same per-column multipliers and bias; the output holds the G
products' rows as one matrix, like the first operand."""
from __future__ import annotations

import math

import numpy as np

from vdla.driver.runtime.layout import pack_matrix_rhs

from .boundary import check_finite, steps_of
from .dense import dense
from .semantics import VdlaSemantics


def matmul(inputs, attrs):
    x, w = inputs[0], inputs[1]
    groups = w.shape[0]
    rows = x.shape[0] // groups
    outs = [dense([x[g * rows:(g + 1) * rows], w[g], *inputs[2:]], attrs)[0] for g in range(groups)]
    return [np.concatenate(outs, axis=0)]


def _quantize_weights(inputs, attrs):
    """fp32 [..., K, N] (batch dims broadcast to attrs["batch_shape"]) -> int8 (G, N/L, K/L, L, L):
    round half to even, saturate to ±127 (symmetric weights), one step per column or one."""
    b = np.asarray(inputs[0], np.float32)         # (fp32, in place: see boundary.quantize_packed)
    check_finite(b)
    k, n = b.shape[-2:]
    batch = np.broadcast_shapes(b.shape[:-2], tuple(attrs["batch_shape"]))
    b = np.broadcast_to(b, batch + (k, n)).reshape(math.prod(batch), k, n)
    step = np.asarray(steps_of(inputs, attrs), np.float32).reshape(-1)
    t = np.divide(b, step.reshape(()) if step.size == 1 else step[:n])
    np.rint(t, out=t)
    q = np.clip(t, -127, 127, out=t).astype(np.int8)
    return [np.stack([pack_matrix_rhs(q[g], attrs["block"]) for g in range(q.shape[0])])]


SEMANTICS = VdlaSemantics("VdlaMatMul", matmul)
QUANTIZE_WEIGHTS = VdlaSemantics("VdlaQuantizeWeights", _quantize_weights, kernel=False, finite_input=True)
