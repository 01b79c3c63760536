"""The blocked channel layout's host ops (vdla.driver.host_ops.layout): NCHWc packing round-trips,
element positions follow the definition, and ConvNCHWc convolves like the NCHW Conv."""
import numpy as np

from vdla.driver.host_ops import layout, nn


def test_nchwc_host_ops_round_trip_and_convolve_like_nchw(rng):
    x = rng.standard_normal((1, 32, 9, 7)).astype(np.float32)
    np.testing.assert_array_equal(layout.unpack(layout.pack(x, 8)), x)
    assert layout.pack(x, 8)[0, 1, 2, 3, 4] == x[0, 1 * 8 + 4, 2, 3]
    w = rng.standard_normal((48, 32, 3, 3)).astype(np.float32)
    np.testing.assert_array_equal(layout.unpack_weight(layout.pack_weight(w, 8, 16, False)), w)
    attrs = {"strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 2]}
    want = nn.conv(x, w, None, attrs)
    (got,) = layout.OPS["ConvNCHWc"]([layout.pack(x, 8), layout.pack_weight(w, 8, 16, False)], attrs)
    np.testing.assert_allclose(layout.unpack(got), want, rtol=1e-5, atol=1e-5)


def test_depthwise_weights_round_trip_and_convolve_like_grouped_nchw(rng):
    x = rng.standard_normal((2, 16, 6, 5)).astype(np.float32)
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    w6 = layout.pack_weight(w, 1, 8, True)
    assert w6.shape == (2, 1, 3, 3, 1, 8) and w6[1, 0, 2, 1, 0, 5] == w[8 + 5, 0, 2, 1]
    attrs = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "depthwise": True}
    want = nn.conv(x, w, None, {**attrs, "group": 16})
    (got,) = layout.OPS["ConvNCHWc"]([layout.pack(x, 8), w6], attrs)
    np.testing.assert_allclose(layout.unpack(got), want, rtol=1e-5, atol=1e-5)


def test_int8_weights_put_four_input_channels_innermost(rng):
    w = rng.integers(-128, 128, (32, 8, 3, 1), dtype=np.int8)
    w7 = layout.pack_weight_int8(w, 8)
    assert w7.shape == (2, 1, 3, 1, 2, 16, 4)
    # output channel 16 + 3, input channel 4 + 2, kernel row 1: block 1, quad 1, lane 3, slot 2
    assert w7[1, 0, 1, 0, 1, 3, 2] == w[19, 6, 1, 0]
    np.testing.assert_array_equal(layout.unpack_weight_int8(w7), w)


def test_quantized_conv_pads_with_the_zero_point_and_requantizes_with_saturation(rng):
    x = rng.integers(0, 256, (1, 4, 5, 5), dtype=np.uint8)
    w = rng.integers(-128, 128, (16, 4, 3, 3), dtype=np.int8)
    attrs = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "pad_value": 77}
    (acc,) = layout.OPS["QConvNCHWcInt8"]([layout.pack(x, 4), layout.pack_weight_int8(w, 4)], attrs)
    padded = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=77)
    want = np.zeros((1, 16, 5, 5), np.int64)
    for i in range(3):
        for j in range(3):
            want += np.einsum("nchw,oc->nohw", padded[:, :, i:i + 5, j:j + 5], w[:, :, i, j].astype(np.int64))
    assert acc.dtype == np.int32
    np.testing.assert_array_equal(layout.unpack(acc), want)
    correction = np.zeros((1, 1, 1, 1, 16), np.int32)
    multiplier = np.full((1, 1, 1, 1, 16), 1e-3, np.float32)
    (y,) = layout.OPS["RequantizeChannels"]([acc, correction, multiplier], {"zero_point": 5, "dtype": "int8"})
    expected = np.clip(np.rint(acc.astype(np.float32) * np.float32(1e-3)) + 5, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(y, expected)


def test_packed_pools_equal_the_nchw_pools(rng):
    x = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0], "dilations": [1, 1]}
    for base in layout.POOLS:
        a = {} if base.startswith("Global") else attrs
        (want,) = nn.OPS[base]([x], a)
        (got,) = layout.OPS[f"{base}NCHWc"]([layout.pack(x, 8)], a)
        np.testing.assert_allclose(layout.unpack(got), want, rtol=1e-6, err_msg=base)
