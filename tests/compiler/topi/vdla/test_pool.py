"""Pooling compiled for the VDLA ALU against numpy, bit for bit: max pooling (with and
without padding, strides 1 and 2; padding pads with -128 and never wins, even over negative
inputs), average pooling as window sum x mul >> shift, global
average pooling, on three configs."""
import numpy as np
import pytest

from vdla.compiler.topi.vdla import Epilogue, PoolKnobs, PoolLayer, compile_pool2d
from vdla.driver.devices import SimulatorDevice

from test_conv import CONFIGS
from vdla_kernels import pool_reference, run_pool


def _pool(config, x, kernel, stride, pad, mode, ep=None, knobs=None):
    dev = SimulatorDevice(config, dram_bytes=1 << 23)
    return run_pool(dev, x, kernel, stride, pad, mode, ep, knobs, check_races=True)[0]


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("c,h,w,k,stride,pad", [
    (32, 12, 12, 3, 2, 1),      # ResNet's stem pool, on inputs that are mostly negative at the border
    (20, 9, 7, 2, 2, 0),        # 2x2 /2, odd sizes, ragged channels
    (16, 6, 6, 3, 1, 0),
])
def test_max_pool_matches_numpy(cfg, c, h, w, k, stride, pad, rng):
    config = CONFIGS[cfg]
    x = rng.integers(-128, 20, (config.batch, c, h, w), dtype=np.int8)     # mostly negative
    y = _pool(config, x, (k, k), stride, pad, "max")
    np.testing.assert_array_equal(y, pool_reference(x, (k, k), stride, pad, "max"))


def test_average_pool_2x2_is_exact_with_a_shift(rng):
    config = CONFIGS["pynq"]
    x = rng.integers(-128, 128, (1, 48, 10, 10), dtype=np.int8)
    ep = Epilogue(shift=2, round=True)
    y = _pool(config, x, (2, 2), 2, 0, "sum", ep)
    want = np.floor((x.astype(np.float64).reshape(1, 48, 5, 2, 5, 2).sum(axis=(3, 5)) + 2) / 4)
    np.testing.assert_array_equal(y, want.astype(np.int8))
    np.testing.assert_array_equal(y, pool_reference(x, (2, 2), 2, 0, "sum", ep))


@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_global_average_pool(cfg, rng):
    """7x7 -> 1x1: the sum of 49 pixels times round(2^12 / 49) >> 12."""
    config = CONFIGS[cfg]
    x = rng.integers(-128, 128, (config.batch, 64, 7, 7), dtype=np.int8)
    ep = Epilogue(mul=84, shift=12, round=True)
    y = _pool(config, x, (7, 7), 1, 0, "sum", ep)
    np.testing.assert_array_equal(y, pool_reference(x, (7, 7), 1, 0, "sum", ep))
    exact = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    assert np.abs(y - exact).max() <= 1                       # within one step of the true mean


def test_pool_knobs_are_checked():
    with pytest.raises(ValueError, match="tile_c=3 does not divide the 4 channel blocks"):
        compile_pool2d(CONFIGS["pynq"], PoolLayer(1, 4, 8, 8, 2, 2, 2), knobs=PoolKnobs(3, 2, 2))
    with pytest.raises(ValueError, match="pooling mode 'mean'"):
        compile_pool2d(CONFIGS["pynq"], PoolLayer(1, 4, 8, 8, 2, 2, 2, mode="mean"))


def test_a_pooling_kernel_records_what_a_conv_kernel_records():
    # one window rule and one meta record for every VDLA kernel (tuners and `vdla info` read it)
    from vdla.compiler.topi.vdla import ConvLayer, compile_conv2d
    config = CONFIGS["pynq"]
    pool = PoolLayer(1, 2, 9, 7, 3, 3, 2, (1, 1, 1, 1))
    conv = ConvLayer(1, 2, 9, 7, 2, 3, 3, 2, (1, 1, 1, 1))
    assert (pool.out_h, pool.out_w) == (conv.out_h, conv.out_w) == (5, 4)
    pool_meta = compile_pool2d(config, pool)[0].meta
    conv_meta = compile_conv2d(config, conv)[0].meta
    keys = ["op", "knobs", "layer", "epilogue", "vta_compat"]
    assert [k for k in pool_meta if k in keys] == [k for k in conv_meta if k in keys] == keys
    assert pool_meta["op"] == "pool2d.max" and pool_meta["layer"]["pads"] == [1, 1, 1, 1]
