"""VdlaConv's semantics for a depthwise conv by DEPTHWISE rows (weights (C/L, KH * stride, L, L),
a tile per kernel row with channel c's taps in row c, lanes 0..KW-1) against numpy's
textbook depthwise convolution, and equal to the same conv in the diagonal layout."""
import numpy as np
import pytest

from vdla.compiler.topi.vdla import pack_depthwise_rows, pack_grouped_weight
from vdla.driver.host_ops.vdla.conv import conv
from vdla.driver.runtime.layout import pack_activation, unpack_activation

L = 16


@pytest.mark.parametrize("stride", [1, 2])
def test_rows_layout_is_the_textbook_depthwise_conv(rng, stride):
    """At stride 2 the packed weights carry a zero tile per kernel row after them, which the
    semantics does not read."""
    c, h, w = 20, 5, 7
    x = rng.integers(-128, 128, (1, c, h, w), dtype=np.int8)
    taps = rng.integers(-128, 128, (c, 1, 3, 3), dtype=np.int8)
    bias = rng.integers(-5000, 5000, c).astype(np.int32)
    layer = {"kh": 3, "kw": 3, "stride": stride, "pads": [1, 1, 1, 1], "depthwise": True, "pad_value": 0}
    ep = {"bias": True, "shift": 6, "lo": -128, "hi": 127}
    blocks = -(-c // L)
    packed_bias = np.zeros((blocks, 1, L), np.int32)
    packed_bias.reshape(-1)[:c] = bias
    xp = pack_activation(x, 1, L)
    by_rows = pack_depthwise_rows(taps, L, 3 * stride)
    assert by_rows.shape == (blocks, 3 * stride, L, L) and not by_rows[:, 3:].any()
    rows = conv([xp, by_rows, packed_bias], {"layer": {**layer, "rows": True}, "epilogue": ep})[0]
    diag = conv([xp, pack_grouped_weight(taps, L), packed_bias], {"layer": layer, "epilogue": ep})[0]
    np.testing.assert_array_equal(rows, diag)
    padded = np.pad(x[0].astype(np.int64), ((0, 0), (1, 1), (1, 1)))
    oh, ow = (h - 1) // stride + 1, (w - 1) // stride + 1
    acc = np.zeros((c, oh, ow), np.int64)
    for ky in range(3):
        for kx in range(3):
            acc += padded[:, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride] \
                * taps[:, 0, ky, kx, None, None]
    want = np.clip((acc + bias[:, None, None]) >> 6, -128, 127)
    np.testing.assert_array_equal(unpack_activation(rows, 1, c)[0], want)
