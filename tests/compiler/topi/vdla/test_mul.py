"""Elementwise multiplication compiled for the VDLA ALU (vdla.compiler.topi.vdla.mul) against the
formula in numpy integers, bit for bit, on three configs with the race check on: same-shape and
channel-broadcast gates, zero points on every side, a floor shift before the rounded one."""
import numpy as np
import pytest

from vdla.compiler.codegen.vdla import VtaCompatError
from vdla.compiler.topi.vdla import pack_bias
from vdla.compiler.topi.vdla.mul import MulLayer, compile_mul
from vdla.compiler.vdla.ops.mul import FACTOR_BITS
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import run_program
from vdla.driver.runtime.layout import pack_activation, unpack_activation

from test_conv import CONFIGS


def _formula(a, b, m, layer):
    """y = clip(((((a - za)(b - zb) m) >> P) + 2^(S-1)) >> S) + zy), numpy's int64 floor division."""
    p = (a.astype(np.int64) - layer.za) * (b.astype(np.int64) - layer.zb) * m.reshape(1, -1, 1, 1)
    p = p // (1 << layer.pre_shift)
    if layer.shift:
        p = (p + (1 << (layer.shift - 1))) // (1 << layer.shift)
    return np.clip(p + layer.zy, layer.lo, layer.hi).astype(np.int8)


@pytest.mark.parametrize("cfg", list(CONFIGS))
@pytest.mark.parametrize("broadcast", [False, True], ids=["same_shape", "gate"])
def test_the_product_is_the_formula(cfg, broadcast, rng):
    config = CONFIGS[cfg]
    B, L = config.batch, config.block
    n, c, h, w = B, 40, 5, 7
    a = rng.integers(-128, 128, (n, c, h, w), dtype=np.int8)
    b = rng.integers(-128, 128, (n, c, 1, 1) if broadcast else (n, c, h, w), dtype=np.int8)
    m = rng.integers(1, 1 << FACTOR_BITS, c).astype(np.int32)
    cb = -(-c // L)
    layer = MulLayer(n // B, cb, h, w, broadcast, za=5, zb=-128, zy=-3, pre_shift=4, shift=12)
    prog, _ = compile_mul(config, layer)
    raw, _ = run_program(SimulatorDevice(config, dram_bytes=1 << 22), prog,
                         [pack_activation(a, B, L), pack_activation(b, B, L), pack_bias(m, B, L)], check_races=True)
    y = unpack_activation(raw.view(np.int8).reshape(n // B, cb, h, w, B, L), n, c)
    np.testing.assert_array_equal(y, _formula(a, b, m, layer))


def test_vta_mode_is_refused_with_the_reason():
    with pytest.raises(VtaCompatError, match="VTA has neither LOAD ACC_8BIT nor ALU MUL"):
        compile_mul(CONFIGS["pynq"], MulLayer(1, 1, 2, 2, False), vta_compat=True)
