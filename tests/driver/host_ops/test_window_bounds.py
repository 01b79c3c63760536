"""Pooling windows and convolutions bounded by the data they touch (vdla.driver.host_ops.window_bounds,
and the compiled pooling kernels, which read the same rule): a window far larger than its input,
or pads and dilations far wider, costs what the input and output cost, and gives onnxruntime's
answer, compiled and on the host; and the bounded form equals the padded one where both can run."""
import time

import numpy as np
import pytest

from ort_oracle import check_node
from vdla.driver import host_ops
from vdla.driver.host_ops.window_bounds import padding_dominates, real_taps, touched_taps


@pytest.mark.parametrize("op, attrs", [
    ("MaxPool", {}), ("AveragePool", {}), ("AveragePool", {"count_include_pad": 1}), ("LpPool", {"p": 2})])
def test_a_window_of_200000_squared_on_a_2x2_input_is_instant_and_right(rng, op, attrs):
    x = rng.standard_normal((1, 2, 2, 2)).astype(np.float32)
    attrs = {"kernel_shape": [200000, 200000], "pads": [100000] * 4, **attrs}
    started = time.perf_counter()
    check_node(op, {"x": x}, attrs, rtol=1e-5)
    assert time.perf_counter() - started < 30      # (host: 149 GiB of padding; kernel: 4e10 taps)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "LpPool"])
@pytest.mark.parametrize("kernel, strides, dilations, pads", [
    ([70, 66], [4, 5], [1, 1], [60, 0, 65, 63]), ([60, 60], [6, 5], [1, 2], [56, 59, 55, 58]),
    ([75, 75], [7, 9], [1, 1], [69, 69, 69, 69])])
def test_the_bounded_form_equals_the_padded_one(rng, op, kernel, strides, dilations, pads):
    """Pads wide enough that the bounded form runs (onnxruntime takes pads below the kernel),
    checked against onnxruntime."""
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    assert padding_dominates(x.shape[2:], pads[:2], pads[2:])
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads}
    if op != "AveragePool":
        attrs["dilations"] = dilations
    if op == "LpPool":
        attrs["p"] = 3
    check_node(op, {"x": x}, attrs, rtol=1e-5)
    if op == "AveragePool":
        check_node(op, {"x": x}, {**attrs, "count_include_pad": 1}, rtol=1e-5)


def test_real_taps_are_the_rows_a_window_covers():
    # size 4, kernel 3, stride 2, dilation 2, 3 rows of padding before: taps at start, +2, +4
    taps = real_taps(4, 3, 2, 2, 3, 4)
    rows = [list(range(*s.indices(4))) for s in taps]
    assert rows == [[1], [1, 3], [1, 3], [3]]      # starts -3, -1, 1, 3
    assert real_taps(2, 1, 1, 1, 5, 2) == [slice(0, 0), slice(0, 0)]


def test_normal_pools_keep_the_vectorized_form():
    assert not padding_dominates((112, 112), (1, 1), (1, 1))
    assert not padding_dominates((2, 2), (1, 1), (1, 1))
    assert host_ops.run("MaxPool", [np.ones((1, 1, 4, 4), np.float32)], {"kernel_shape": [2, 2]})[0].shape == (1, 1, 3, 3)


def test_a_conv_with_dilations_and_pads_of_100000_on_a_2x2_input_is_instant_and_right(rng):
    x = rng.standard_normal((1, 2, 2, 2)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    started = time.perf_counter()
    check_node("Conv", {"x": x, "w": w, "b": b}, {"dilations": [100000, 100000], "pads": [100000] * 4},
               constants={"w", "b"}, rtol=1e-5)
    assert time.perf_counter() - started < 30      # (padded input: 298 GiB)


@pytest.mark.parametrize("shape, kernel, attrs", [
    ((2, 4, 4, 5), (6, 2, 3, 2), {"strides": [3, 2], "dilations": [2, 5], "pads": [60, 3, 59, 70], "group": 2}),
    ((1, 3, 7), (4, 3, 4), {"strides": [2], "dilations": [3], "pads": [2000, 3100]}),
    ((1, 2, 3, 2, 3), (2, 1, 2, 2, 3), {"dilations": [4, 1, 2], "pads": [9, 0, 5, 12, 11, 30], "group": 2})])
def test_the_gathered_conv_equals_onnxruntimes(rng, shape, kernel, attrs):
    """Pads wide enough that the gathered form runs, in 1, 2 and 3 spatial dimensions, grouped."""
    x = rng.standard_normal(shape).astype(np.float32)
    assert padding_dominates(x.shape[2:], attrs["pads"][:x.ndim - 2], attrs["pads"][x.ndim - 2:])
    w = rng.standard_normal(kernel).astype(np.float32)
    b = rng.standard_normal(kernel[0]).astype(np.float32)
    check_node("Conv", {"x": x, "w": w, "b": b}, attrs, constants={"w", "b"}, rtol=1e-4, atol=1e-5)


def test_a_gathered_conv_integer_equals_onnxruntimes(rng):
    x = rng.integers(0, 256, (1, 2, 3, 3), dtype=np.uint8)
    w = rng.integers(-128, 128, (2, 2, 2, 2), dtype=np.int8)
    zp = np.array(7, np.uint8)
    check_node("ConvInteger", {"x": x, "w": w, "x_zero_point": zp}, {"dilations": [5, 2], "pads": [12, 0, 8, 15]},
               constants={"w", "x_zero_point"})


def test_touched_taps_are_the_outputs_whose_window_reaches_the_data():
    # size 2, kernel 3, stride 1, dilation 3, 4 rows of padding before: output o's taps at o-4, o-1, o+2
    touched, taps = touched_taps(2, 3, 1, 3, 4, 9)
    assert touched.tolist() == [1, 2, 4, 5]
    assert taps.tolist() == [[2, 0, 2], [2, 1, 2], [0, 2, 2], [1, 2, 2]]     # 2: the appended zero


@pytest.mark.parametrize("attrs", [
    {"dilations": [100000, 100000], "pads": [100000] * 4},                 # the full result: 320 GB
    {"strides": [3, 2], "dilations": [2, 3], "pads": [2, 1, 3, 0], "group": 2},
    {"strides": [2, 2], "output_shape": [5, 6]}])                          # the pads from the output shape
def test_conv_transpose_adds_only_what_lands_in_the_output(rng, attrs):
    x = rng.standard_normal((1, 4, 2, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    check_node("ConvTranspose", {"x": x, "w": w}, attrs, constants={"w"}, rtol=1e-4, atol=1e-5)
