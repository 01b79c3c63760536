"""The requantizer's statement (vdla.hw.requantizer) against the reference model's restatement
(simulator.reference._requantize, written from the contract on Python ints) and against plain
real arithmetic where the two should meet."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.hw.alu_ops import TABLE_ENTRIES
from vdla.hw.requantizer import (MUL_BITS, MUL_MAX, MUL_MIN, SHIFT_MAX, ctrl_field, multiplier, pack_ctrl,
                                 requantize)
from vdla.simulator.reference import _requantize

INT32 = (-(1 << 31), (1 << 31) - 1)


def _random_registers(rng, n):
    x = rng.integers(*INT32, size=n, endpoint=True)
    bias = rng.integers(*INT32, size=n, endpoint=True)
    mul = rng.integers(*INT32, size=n, endpoint=True)
    ctrl = rng.integers(*INT32, size=n, endpoint=True)
    return x, bias, mul, ctrl


def test_agrees_with_the_reference_model_on_random_words():
    """Random CTRL words set the table bit about half the time: those lanes write the table's
    entry for the requantized code."""
    rng = np.random.default_rng(0)
    x, bias, mul, ctrl = _random_registers(rng, 4000)
    table = rng.integers(-128, 128, TABLE_ENTRIES).astype(np.int8)
    ours = requantize(x, bias, mul, ctrl, table)
    ref = [_requantize(int(a), int(b), int(m), int(c) & 0xFFFFFFFF, table) for a, b, m, c in zip(x, bias, mul, ctrl)]
    assert ours.tolist() == ref
    looked = ctrl_field(ctrl, "table") == 1
    assert 0.4 < looked.mean() < 0.6
    np.testing.assert_array_equal(ours[looked], table[requantize(x, bias, mul, ctrl)[looked].astype(np.int64) + 128])


@pytest.mark.parametrize("x", [INT32[0], INT32[1], 0, -1, 1])
@pytest.mark.parametrize("bias", [INT32[0], INT32[1], 0])
@pytest.mark.parametrize("mul", [MUL_MIN, MUL_MAX, 0, 1, -1, (1 << 31) - 1])
@pytest.mark.parametrize("shift", [0, 1, 31, SHIFT_MAX])
def test_agrees_with_the_reference_model_at_the_extremes(x, bias, mul, shift):
    ctrl = int(pack_ctrl(shift, -3, -128, 127)) & 0xFFFFFFFF
    assert int(requantize(x, bias, mul, ctrl)) == _requantize(x, bias, mul, ctrl, np.zeros(TABLE_ENTRIES))


def test_is_rounded_real_arithmetic_when_nothing_clips():
    # y = round_half_up((x + b) * m / 2^s) + z: the value a fixed-point requantization means
    rng = np.random.default_rng(1)
    x = rng.integers(-(1 << 20), 1 << 20, size=2000)
    b = rng.integers(-1000, 1000, size=2000)
    m, s = 12345, 27
    want = np.floor((x + b) * m / 2.0 ** s + 0.5) + 5
    got = requantize(x, b, m, pack_ctrl(s, 5, -128, 127))
    inside = (want >= -128) & (want <= 127)
    assert inside.sum() > 1000
    assert np.array_equal(got[inside], want[inside].astype(np.int8))
    assert np.all(got[want > 127] == 127) and np.all(got[want < -128] == -128)


def test_clip_bounds_and_an_empty_clip():
    assert requantize(1000, 0, 1, pack_ctrl(0, 0, -5, 7)) == 7
    assert requantize(-1000, 0, 1, pack_ctrl(0, 0, -5, 7)) == -5
    assert requantize(0, 0, 1, pack_ctrl(0, 0, 9, 2)) == 2          # lo > hi: hi


def test_the_multiplier_is_the_low_bits_signed():
    assert int(multiplier(1 << MUL_BITS)) == 0
    assert int(multiplier((1 << MUL_BITS) - 1)) == -1
    assert int(multiplier(MUL_MAX)) == MUL_MAX


def test_pack_ctrl_round_trips_and_refuses_what_does_not_fit():
    c = pack_ctrl([0, SHIFT_MAX], [-128, 127], [-128, 0], [127, -1])
    assert ctrl_field(c, "shift").tolist() == [0, SHIFT_MAX]
    assert ctrl_field(c, "zero").tolist() == [-128, 127]
    assert ctrl_field(c, "lo").tolist() == [-128, 0]
    assert ctrl_field(c, "hi").tolist() == [127, -1]
    with pytest.raises(ValueError, match="shift"):
        pack_ctrl(SHIFT_MAX + 1, 0, 0, 0)
    with pytest.raises(ValueError, match="zero point"):
        pack_ctrl(0, 128, 0, 0)
