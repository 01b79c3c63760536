"""Integer matrix products of the accelerator's int8 codes through float64 BLAS, exactly.

numpy multiplies int64 matrices with plain loops, not BLAS: a ResNet-18's convolutions as an
int64 einsum took 5.4 s, every vdla compile's calibration and every numpy-reference run paying
it. A product of two int8 codes, and every partial sum of K of them, is an integer far below
2^53, which float64 holds exactly whatever order BLAS adds in, so the float64 product converts
back to the very int64 result. Where the operands' magnitudes say a sum could pass 2^53 the
product stays on int64.
"""
from __future__ import annotations

import numpy as np

EXACT_BELOW = 2 ** 53      # float64 represents every integer of smaller magnitude


def int_matmul(a: np.ndarray, b: np.ndarray, peak_a: int | None = None, k_axes: int = 1) -> np.ndarray:
    """a @ b as int64 for integer a [..., K] (any strides: a windows view) and b [K, N]; with
    k_axes > 1 a's last k_axes axes together are K (row-major), as a view could not merge them.
    peak_a: a bound on |a| known to the caller (else it is measured)."""
    lead = a.shape[:a.ndim - k_axes]
    k = b.shape[0]
    assert int(np.prod(a.shape[a.ndim - k_axes:])) == k, (a.shape, b.shape, k_axes)
    peak_a = _peak(a) if peak_a is None else int(peak_a)
    if peak_a * _peak(b) * k < EXACT_BELOW:
        out = (a.astype(np.float64, order="C").reshape(-1, k) @ b.astype(np.float64)).astype(np.int64)
    else:
        out = a.astype(np.int64, order="C").reshape(-1, k) @ b.astype(np.int64)
    return out.reshape(*lead, b.shape[-1])


def _peak(x: np.ndarray) -> int:
    return max(abs(int(x.max())), abs(int(x.min()))) if x.size else 0
