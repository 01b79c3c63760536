"""cocotb unit bench of one requantizer lane (vdla_requant.sv) against
vdla.hw.requantizer.requantize, the statement.

Run by test_requant.py (one Verilator build per pipeline depth). Each batch loads the three
registers (one write a cycle, as SETQ does), streams accumulator values one a cycle and lets
the pipeline drain before the next batch, so no value is in flight while the registers change
(the compute module's contract). Inputs are driven at falling edges; y is read at the
falling edge REQUANT_DEPTH cycles after its x.

The settings and values aim at the datapath's corners: shifts 0..63 (ties when the scaled
value is an odd multiple of 2^(s-1), of both signs), the multiplier's extremes and MUL's junk
high bits, BIAS that carries x + b beyond int32, results at the edges of the saturation window
(+-2^10 around the rounding, the 2^17-wide coarse window), clip bounds in either order.
"""
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

from vdla.hw.requantizer import BIAS, CTRL, MUL, MUL_BITS, MUL_MAX, MUL_MIN, SHIFT_MAX, pack_ctrl, requantize

BATCHES = 400
VALUES = 48
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def _u32(v: int) -> int:
    return int(v) & 0xFFFFFFFF


def _settings(rng):
    """(bias, MUL word, CTRL word, multiplier, shift) of one batch."""
    s = int(rng.choice([0, 1, 2, 3, SHIFT_MAX, int(rng.integers(0, SHIFT_MAX + 1)), int(rng.integers(8, 52))]))
    m = int(rng.choice([1, -1, MUL_MIN, MUL_MAX, int(rng.integers(MUL_MIN, MUL_MAX + 1)),
                        int(rng.integers(-300, 300))]))
    junk = int(rng.integers(0, 1 << (32 - MUL_BITS)))
    mul_word = int(np.array(((junk << MUL_BITS) | (m & ((1 << MUL_BITS) - 1))) & 0xFFFFFFFF,
                            dtype=np.uint32).view(np.int32))
    b = int(rng.choice([0, INT32_MIN, INT32_MAX, int(rng.integers(INT32_MIN, INT32_MAX + 1)),
                        int(rng.integers(-1000, 1000))]))
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2))
    if rng.random() < 0.15:
        lo, hi = hi, lo          # lo > hi: the result is hi
    if rng.random() < 0.3:
        lo, hi = -128, 127
    z = int(rng.integers(-128, 128))
    ctrl = int(pack_ctrl(s, z, lo, hi))
    return b, mul_word, ctrl, m, s


def _values(rng, b: int, m: int, s: int) -> list[int]:
    """Accumulator values for one batch: extremes, random, and ones whose scaled value
    (x + b) * m lands on a rounding tie or at the saturation window's edges."""
    out = [INT32_MIN, INT32_MAX, 0, -1, 1]
    while len(out) < VALUES:
        kind = rng.integers(0, 4)
        if kind == 0:
            out.append(int(rng.integers(INT32_MIN, INT32_MAX + 1)))
            continue
        if kind == 1:       # a tie: (x + b) * m = (2k + 1) * 2^(s-1)
            target = (2 * int(rng.integers(-300, 300)) + 1) << max(s - 1, 0)
        elif kind == 2:     # 2t >> s around the saturation window of the result (+-2^10)
            target = (int(rng.choice([-1, 1])) * 1024 + int(rng.integers(-3, 4))) << max(s - 1, 0)
        else:               # around the coarse window (2^17 after the shift by a multiple of 8)
            target = (int(rng.choice([-1, 1])) * (1 << 17) + int(rng.integers(-3, 4))) << (s & ~7)
        x = -(-target // m) - b if m else int(rng.integers(INT32_MIN, INT32_MAX + 1))
        out.append(min(max(x, INT32_MIN), INT32_MAX))
    return out


@cocotb.test()
async def requant_lane_matches_statement(dut):
    depth = int(os.environ["REQUANT_DEPTH"])
    rng = np.random.default_rng(int(os.environ.get("REQUANT_SEED", "1")))
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    dut.clear.value = 0
    dut.we.value = 0
    dut.idx.value = 0
    dut.wdata.value = 0
    dut.x.value = 0
    for _ in range(2):
        await FallingEdge(dut.clk)
    dut.rst.value = 0
    checked = 0
    mismatches = []
    for batch in range(BATCHES):
        b, mul_word, ctrl, m, s = _settings(rng)
        for index, word in ((BIAS, b), (MUL, mul_word), (CTRL, ctrl)):
            await FallingEdge(dut.clk)
            dut.we.value, dut.idx.value, dut.wdata.value = 1, index, _u32(word)
        await FallingEdge(dut.clk)
        dut.we.value = 0
        xs = _values(rng, b, m, s)
        want = requantize(np.array(xs, dtype=np.int64), b, mul_word, ctrl).astype(np.int64)
        pending = []          # (cycle the result is due, x, expected)
        for cycle in range(len(xs) + depth):
            if cycle < len(xs):
                dut.x.value = _u32(xs[cycle])
                pending.append((cycle + depth, xs[cycle], int(want[cycle])))
            await FallingEdge(dut.clk)
            while pending and pending[0][0] == cycle + 1:
                _, x, expected = pending.pop(0)
                got = dut.y.value.to_signed()
                checked += 1
                if got != expected and len(mismatches) < 10:
                    mismatches.append(f"batch {batch}: x={x} bias={b} mul=0x{_u32(mul_word):08x} "
                                      f"ctrl=0x{_u32(ctrl):08x}: RTL {got}, statement {expected}")
    assert not mismatches, "\n".join(mismatches)
    assert checked == BATCHES * VALUES
    dut._log.info(f"{checked} values checked at depth {depth}")
