"""The compiler's VTA mode: every kernel kind compiled with vta_compat=True has a stream the
VTA check finds nothing in, and computes numpy's answer on the simulator; the default mode's
streams are flagged where they use VDLA's extensions; what VTA cannot compute is refused
with the layer named."""
import numpy as np
import pytest

from vdla.compiler.codegen.vdla import VtaCompatError
from vdla.compiler.topi.vdla import (AddLayer, ConvLayer, DenseLayer, Epilogue, PoolLayer, compile_add,
                                     compile_conv2d, compile_dense, compile_pool2d, run_add)
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime.vta_check import check_program_vta

from test_conv import CONFIGS
from vdla_kernels import conv_reference, dense_reference, pool_reference, run_conv, run_dense, run_pool


def _device(config):
    return SimulatorDevice(config, dram_bytes=1 << 24)


def _findings(prog, config):
    return sorted({f.kind for f in check_program_vta(prog, config)})


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_with_bias_long_shift_and_relu(cfg, depthwise, rng):
    config = CONFIGS[cfg]
    c, o = (24, 24) if depthwise else (20, 40)
    x = rng.integers(-128, 128, (config.batch, c, 9, 10), dtype=np.int8)
    w = rng.integers(-128, 128, (c, 1, 3, 3) if depthwise else (o, c, 3, 3), dtype=np.int8)
    bias = rng.integers(-1 << 16, 1 << 16, (o,), dtype=np.int32)
    ep = Epilogue(bias=True, shift=19, lo=0)         # 19 > 15: two SHRs in VTA mode
    y, _, prog = run_conv(_device(config), x, w, 2, (1, 1, 1, 1), ep, bias=bias, depthwise=depthwise,
                          check_races=True, vta_compat=True)
    assert _findings(prog, config) == []
    np.testing.assert_array_equal(y, conv_reference(x, w, 2, 1, ep, bias, depthwise=depthwise))


@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_dense_with_bias_and_rounded_shift(cfg, rng):
    config = CONFIGS[cfg]
    a = rng.integers(-128, 128, (6, 70), dtype=np.int8)
    b = rng.integers(-128, 128, (70, 50), dtype=np.int8)
    bias = rng.integers(-5000, 5000, (50,), dtype=np.int32)
    ep = Epilogue(bias=True, mul=1, shift=12, round=True, lo=-100, hi=120)    # mul 1 is no multiply
    y, _, prog = run_dense(_device(config), a, b, ep, bias=bias, check_races=True, vta_compat=True)
    assert _findings(prog, config) == []
    np.testing.assert_array_equal(y, dense_reference(a, b, ep, bias))


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("k,stride,pad,mode,ep", [
    (3, 2, 1, "max", None),                                           # ResNet's stem pool, zero padding
    (2, 2, 0, "max", None),
    (2, 2, 0, "sum", Epilogue(shift=2, round=True)),                  # average 2x2
    (7, 1, 0, "sum", Epilogue(mul=84, shift=12, round=True)),         # global average: mul on the GEMM
])
def test_pooling(cfg, k, stride, pad, mode, ep, rng):
    config = CONFIGS[cfg]
    low = 0 if pad else -128            # padded max pooling in VTA mode needs a non-negative input
    x = rng.integers(low, 128, (config.batch, 40, 7 if k == 7 else 9, 7 if k == 7 else 11), dtype=np.int8)
    y, _, prog = run_pool(_device(config), x, (k, k), stride, pad, mode, ep, check_races=True, vta_compat=True,
                          pad_value=0 if pad else None)
    assert _findings(prog, config) == []
    np.testing.assert_array_equal(y, pool_reference(x, (k, k), stride, pad, mode, ep))


@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_residual_add_with_factors_and_relu(cfg, rng):
    config = CONFIGS[cfg]
    a = rng.integers(-128, 128, (config.batch, 40, 9, 11), dtype=np.int8)
    b = rng.integers(-128, 128, (config.batch, 40, 9, 11), dtype=np.int8)
    ep = Epilogue(shift=17, lo=0)
    y, _, prog = run_add(_device(config), a, b, 110, -70, ep, check_races=True, vta_compat=True)
    assert _findings(prog, config) == []
    want = (a.astype(np.int64) * 110 + b.astype(np.int64) * -70) >> 17
    np.testing.assert_array_equal(y, np.clip(want, 0, 127).astype(np.int8))


def test_residual_add_per_channel_with_offset(rng):
    config = CONFIGS["pynq"]
    a = rng.integers(-128, 128, (1, 40, 6, 7), dtype=np.int8)
    b = rng.integers(-128, 128, (1, 40, 6, 7), dtype=np.int8)
    ma, mb = rng.integers(-128, 128, 40), rng.integers(-128, 128, 40)
    offset = rng.integers(-5000, 5000, 40)
    ep = Epilogue(shift=10, round=True)
    y, _, prog = run_add(_device(config), a, b, ma, mb, ep, offset=offset, check_races=True, vta_compat=True)
    assert _findings(prog, config) == []
    per = lambda v: np.asarray(v, np.int64)[None, :, None, None]            # noqa: E731
    want = (a * per(ma) + b * per(mb) + per(offset) + (1 << 9)) >> 10
    np.testing.assert_array_equal(y, np.clip(want, -128, 127).astype(np.int8))


def test_the_default_mode_is_flagged_where_it_uses_vdla_extensions():
    config = CONFIGS["pynq"]
    conv, _ = compile_conv2d(config, ConvLayer(1, 2, 8, 8, 2, pad_value=-128),
                             Epilogue(bias=True, pre_shift=3, scale=True, shift=20, lo=0))
    assert _findings(conv, config) == ["alu_mul", "pad_min", "shr_range"]
    pool, _ = compile_pool2d(config, PoolLayer(1, 2, 8, 8, 3, 3, 2, (1, 1, 1, 1), "max"))
    assert _findings(pool, config) == ["pad_min"]      # (the window comes through the GEMM core)
    add, _ = compile_add(config, AddLayer(1, 2, 6, 6, 1000, 2000), Epilogue(shift=10))
    assert _findings(add, config) == ["acc_8bit", "alu_mul"]
    dense, _ = compile_dense(config, DenseLayer(2, 4, 4), Epilogue(bias=True, shift=8, round=True))
    assert _findings(dense, config) == []          # what VTA can run, the default mode already emits


@pytest.mark.parametrize("compile_,match", [
    (lambda c: compile_conv2d(c, ConvLayer(1, 2, 8, 8, 2), Epilogue(bias=True, scale=True), name="conv7",
                              vta_compat=True), "conv7: the epilogue multiplies by a per-channel scale"),
    (lambda c: compile_dense(c, DenseLayer(2, 4, 4), Epilogue(mul=3), name="fc", vta_compat=True),
     "fc: the epilogue multiplies by 3 .ALU MUL."),
    (lambda c: compile_conv2d(c, ConvLayer(1, 2, 8, 8, 2), Epilogue(residual=True), name="c", vta_compat=True),
     "c: the epilogue adds an int8 residual, loaded with LOAD ACC_8BIT"),
    (lambda c: compile_conv2d(c, ConvLayer(1, 2, 8, 8, 2, pad_value=-128), name="c2", vta_compat=True),
     "c2: the input .zero point -128. pads with -128 .LOAD pad_min."),
    (lambda c: compile_pool2d(c, PoolLayer(1, 2, 8, 8, 3, 3, 2, (1, 1, 1, 1), "max"), name="pool1", vta_compat=True),
     "pool1: max pooling pads with -128"),
    (lambda c: compile_pool2d(c, PoolLayer(1, 2, 8, 8, 2, 2, 2, mode="sum"), Epilogue(mul=300, shift=10),
                              name="avg", vta_compat=True), "avg: the averaging multiplier mul=300 does not fit"),
    (lambda c: compile_add(c, AddLayer(1, 2, 6, 6, 11000, 5), Epilogue(shift=14), name="res3", vta_compat=True),
     "res3: ma=11000 does not fit an int8 weight"),
])
def test_what_vta_cannot_compute_is_refused_with_the_layer_named(compile_, match):
    with pytest.raises(VtaCompatError, match=match):
        compile_(CONFIGS["pynq"])


def test_an_unpadded_layer_with_zero_point_minus_128_compiles_for_vta():
    """Overhanging tiles pad too, but those outputs are never stored: VTA mode pads them with zeros."""
    config = CONFIGS["pynq"]
    prog, _ = compile_conv2d(config, ConvLayer(1, 2, 7, 7, 2, pads=(0, 0, 0, 0), pad_value=-128),
                             Epilogue(bias=True, shift=4), vta_compat=True)
    assert _findings(prog, config) == []
