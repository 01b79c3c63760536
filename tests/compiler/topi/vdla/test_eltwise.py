"""Elementwise int8 addition of two differently scaled tensors on the VDLA ALU against numpy."""
import numpy as np
import pytest

from vdla.compiler.topi.vdla import AddLayer, Epilogue, compile_add
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import run_program
from vdla.driver.runtime.layout import pack_activation, unpack_activation

from test_conv import CONFIGS


@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_scaled_add_with_relu(cfg, rng):
    config = CONFIGS[cfg]
    a = rng.integers(-128, 128, (config.batch, 40, 9, 11), dtype=np.int8)
    b = rng.integers(-128, 128, (config.batch, 40, 9, 11), dtype=np.int8)
    B, L = config.batch, config.block
    pa, pb = pack_activation(a, B, L), pack_activation(b, B, L)
    layer = AddLayer(pa.shape[0], pa.shape[1], 9, 11, ma=11000, mb=-7000)
    ep = Epilogue(shift=14, round=True, lo=0)
    prog, _ = compile_add(config, layer, ep)
    raw, _ = run_program(SimulatorDevice(config, dram_bytes=1 << 22), prog, [pa, pb], check_races=True)
    y = unpack_activation(raw.view(np.int8).reshape(pa.shape), a.shape[0], 40)
    want = (a.astype(np.int64) * 11000 + b.astype(np.int64) * -7000 + (1 << 13)) >> 14
    np.testing.assert_array_equal(y, np.clip(want, 0, 127).astype(np.int8))


def test_factor_outside_the_immediate_is_refused():
    with pytest.raises(ValueError, match="ma=40000: MUL immediate 40000 does not fit the ALU.s 16-bit signed field"):
        compile_add(CONFIGS["pynq"], AddLayer(1, 2, 4, 4, 40000, 1), Epilogue())
