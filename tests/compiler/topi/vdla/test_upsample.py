"""Nearest upsampling compiled for the VDLA ALU (vdla.compiler.topi.vdla.upsample) against numpy's
repeat, bit for bit, on three configs with the race check on; factors of 2 (YOLO) and others,
ragged channels; knobs and VTA mode refused with the reason named."""
import numpy as np
import pytest

from vdla.compiler.codegen.vdla import VtaCompatError
from vdla.compiler.topi.vdla.upsample import (UpsampleKnobs, UpsampleLayer, compile_upsample,
                                              default_upsample_knobs)
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime.layout import pack_activation, unpack_activation

from test_conv import CONFIGS
from vdla.driver.runtime import run_program


def _upsample(config, x, fh, fw, knobs=None):
    """y (N, C, H*fh, W*fw) int8 from the kernel on the simulator, and the launch."""
    B, L = config.batch, config.block
    n, c, h, w = x.shape
    xp = pack_activation(x, B, L)
    layer = UpsampleLayer(xp.shape[0], xp.shape[1], h, w, fh, fw)
    prog, _ = compile_upsample(config, layer, knobs)
    raw, launch = run_program(SimulatorDevice(config, dram_bytes=1 << 22), prog, [xp], check_races=True)
    out = raw.view(np.int8).reshape(layer.n, layer.c, layer.out_h, layer.out_w, B, L)
    return unpack_activation(out, n, c), launch


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("c,h,w,fh,fw", [
    (40, 5, 7, 2, 2),        # YOLO's 2x, odd sizes, ragged channels
    (16, 3, 4, 3, 1),        # taller only
    (32, 2, 3, 1, 4),        # wider only
])
def test_upsampling_copies_each_pixel_into_its_block(cfg, c, h, w, fh, fw, rng):
    config = CONFIGS[cfg]
    x = rng.integers(-128, 128, (config.batch, c, h, w), dtype=np.int8)
    y, _ = _upsample(config, x, fh, fw)
    np.testing.assert_array_equal(y, x.repeat(fh, axis=2).repeat(fw, axis=3))


def test_one_virtual_thread_and_small_tiles_give_the_same_pixels(rng):
    config = CONFIGS["pynq"]
    x = rng.integers(-128, 128, (1, 48, 4, 6), dtype=np.int8)
    y, _ = _upsample(config, x, 2, 2, UpsampleKnobs(1, 2, 4, 1))
    np.testing.assert_array_equal(y, x.repeat(2, axis=2).repeat(2, axis=3))


def test_the_default_tiles_fill_the_accumulators_and_knobs_are_checked():
    config = CONFIGS["pynq"]
    layer = UpsampleLayer(1, 16, 20, 20, 2, 2)
    k = default_upsample_knobs(config, layer)
    pixels = k.tile_h * k.tile_w
    assert k.tile_c * (pixels + pixels // 4) * k.vthreads <= config.acc_depth
    with pytest.raises(ValueError, match="tile_h=3 is not a multiple of the factor 2 that divides the output's 40"):
        compile_upsample(config, layer, UpsampleKnobs(1, 3, 4))
    with pytest.raises(ValueError, match="tile_c=3 does not divide the 16 channel blocks"):
        compile_upsample(config, layer, UpsampleKnobs(3, 2, 2))
    with pytest.raises(VtaCompatError, match="VTA has no LOAD ACC_8BIT"):
        compile_upsample(config, layer, vta_compat=True)
