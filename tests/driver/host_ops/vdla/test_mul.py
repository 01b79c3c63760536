"""VdlaMul's numpy semantics (vdla.driver.host_ops.vdla.mul) against the real product it stands
for: the dequantized codes multiplied in float64 and quantized again, within the one step the
fixed-point factor and the rounding may cost, and exact where the factor is a power of two."""
import numpy as np

from vdla.compiler.topi.vdla import pack_bias
from vdla.driver.host_ops.vdla import OPS
from vdla.driver.runtime.layout import pack_activation, unpack_activation


def _run(a, b, m, **layer):
    c = a.shape[1]
    (y,) = OPS["VdlaMul"]([pack_activation(a, 1, 16), pack_activation(b, 1, 16), pack_bias(m, 1, 16)],
                          {"layer": {"lo": -128, "hi": 127, **layer}})
    return unpack_activation(y, 1, c).astype(np.int64)


def test_a_gate_scales_each_channel_like_the_float_product(rng):
    a = rng.integers(-128, 128, (1, 24, 3, 4), dtype=np.int8)
    gate = rng.integers(-128, 128, (1, 24, 1, 1), dtype=np.int8)       # a sigmoid's codes: zero point -128
    m = np.full(24, 3 << 12, np.int32)                                 # factor 3 * 2^12 / 2^(4 + 13) = 3/32
    y = _run(a, gate, m, za=2, zb=-128, zy=1, pre_shift=4, shift=13)
    want = (a.astype(np.float64) - 2) * (gate.astype(np.float64) + 128) * 3 / 32 + 1
    assert np.abs(y - np.clip(want, -128, 127)).max() <= 1


def test_a_power_of_two_factor_rounds_half_up_exactly(rng):
    a = rng.integers(-128, 128, (1, 16, 2, 2), dtype=np.int8)
    b = rng.integers(-128, 128, (1, 16, 2, 2), dtype=np.int8)
    y = _run(a, b, np.ones(16, np.int32), za=0, zb=0, zy=0, pre_shift=0, shift=7)
    want = np.floor(a.astype(np.float64) * b / 128 + 0.5)
    np.testing.assert_array_equal(y, np.clip(want, -128, 127))
