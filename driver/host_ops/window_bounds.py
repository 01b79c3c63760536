"""Sliding windows bounded by the data they can touch.

A pooling window is an attribute, not a tensor: a 124-byte model can ask for a 200000 x 200000
MaxPool window with pads of 100000 on a 2 x 2 input. Padding the input to the window's reach
then costs 149 GiB, and visiting every tap 4e10 steps per output, though every window sees at
most the 4 real values. So when the padded input would be much larger than the input itself,
the pooling ops reduce each window over the slice of real data it covers instead (the padding
adds nothing to a max, a sum or an Lp norm; the counts an average divides by are arithmetic):
work and memory bounded by the input and the output, whatever the attributes say.

A convolution's kernel is a tensor, but its pads and dilations are attributes: pads and
dilations of 100000 on a 2 x 2 input ask for a 298 GiB padded input for a 2 x 2 output. There
the taps are gathered from the input itself (`touched_taps`: a tap on padding reads one zero
appended to each axis), and only the outputs some tap of which lands on real data are computed;
the others are the bias alone.
"""
from __future__ import annotations

import itertools
import math

import numpy as np


def padding_dominates(spatial, begins, ends) -> bool:
    """Whether padding the input to the windows' reach would cost far more than the input."""
    padded = math.prod(n + b + e for n, b, e in zip(spatial, begins, ends))
    return padded > 4 * math.prod(spatial) + 4096


def real_taps(size: int, kernel: int, stride: int, dilation: int, begin: int, out: int) -> list[slice]:
    """Per output position along one axis, the slice of input rows its window covers (the taps
    that land on real data, not padding); an empty slice where it covers none."""
    taps = []
    for y in range(out):
        start = y * stride - begin                       # the input row of tap 0
        first = 0 if start >= 0 else (-start + dilation - 1) // dilation
        last = min(kernel - 1, (size - 1 - start) // dilation) if start <= size - 1 else -1
        taps.append(slice(start + first * dilation, start + last * dilation + 1, dilation) if first <= last
                    else slice(0, 0))
    return taps


def tap_counts(size: int, kernel: int, stride: int, dilation: int, begin: int, out: int) -> np.ndarray:
    """Per output position along one axis, how many of its taps land on the `size` rows."""
    return np.array([len(range(*s.indices(size))) for s in real_taps(size, kernel, stride, dilation, begin, out)])


def reduce_windows(x: np.ndarray, kernel, strides, dilations, begins, out, reduce, empty) -> np.ndarray:
    """(N, C, *out): `reduce(window, axes)` over each window's real data, `empty` where a window
    covers only padding."""
    nd = len(kernel)
    axes = tuple(range(2, 2 + nd))
    per_axis = [real_taps(x.shape[2 + i], kernel[i], strides[i], dilations[i], begins[i], out[i]) for i in range(nd)]
    result = np.empty(x.shape[:2] + tuple(out), np.result_type(reduce(x[(slice(None), slice(None)) + (slice(0, 1),) * nd],
                                                                      axes)))
    for index in itertools.product(*[range(o) for o in out]):
        slices = tuple(per_axis[i][index[i]] for i in range(nd))
        window = x[(slice(None), slice(None)) + slices]
        result[(slice(None), slice(None)) + index] = reduce(window, axes) if window.size else empty
    return result


def touched_taps(size: int, kernel: int, stride: int, dilation: int, begin: int, out: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Along one axis: the output positions with at least one tap on the `size` rows, and for
    each of them the input row of every tap ([positions, kernel]; `size` where a tap is on
    padding, the index of a zero the caller appends)."""
    rows = (np.arange(out, dtype=np.int64)[:, None] * stride - begin
            + np.arange(kernel, dtype=np.int64)[None, :] * dilation)
    real = (rows >= 0) & (rows < size)
    touched = np.flatnonzero(real.any(axis=1))
    return touched, np.where(real[touched], rows[touched], size)
