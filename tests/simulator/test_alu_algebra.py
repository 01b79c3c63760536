"""The ALU opcodes as algebras of composable lane functions (vdla.simulator.alu_algebra): for every
opcode, composing two functions, raising one to a power (counts up to millions, and one count per
entry) and reducing runs all equal applying vdla.hw's `lane_op` step by step."""
import numpy as np
import pytest

from vdla.hw import AluOp
from vdla.hw.alu_ops import LANE_MAX, LANE_MIN, SHR_MAX, SHR_MIN, lane_op
from vdla.simulator.alu_algebra import ALGEBRAS

OPS = [AluOp.ADD, AluOp.MUL, AluOp.MIN, AluOp.MAX, AluOp.SHR]


def lanes(rng, shape):
    values = rng.integers(LANE_MIN, LANE_MAX + 1, shape, dtype=np.int64)
    special = rng.choice([LANE_MIN, LANE_MAX, -1, 0, 1, 3, -7], shape)
    return np.where(rng.random(shape) < 0.25, special, values).astype(np.int32)


def operands(rng, op, shape):
    if op == AluOp.SHR:                     # shift amounts, and full words whose low bits count
        small = rng.integers(SHR_MIN, SHR_MAX + 1, shape)
        return np.where(rng.random(shape) < 0.7, small, lanes(rng, shape)).astype(np.int32)
    return lanes(rng, shape)


def by_steps(op, x, ops_in_order):
    for b in ops_in_order:
        x = lane_op(op, x, b)
    return x


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_then_is_one_step_after_the_other(op, rng):
    algebra = ALGEBRAS[op]
    x, a, b = lanes(rng, 512), operands(rng, op, 512), operands(rng, op, 512)
    f, g = algebra.of_operand(a.astype(np.int64)), algebra.of_operand(b.astype(np.int64))
    np.testing.assert_array_equal(algebra.apply(f, x), lane_op(op, x, a))
    np.testing.assert_array_equal(algebra.apply(algebra.then(f, g), x), by_steps(op, x, [a, b]))
    np.testing.assert_array_equal(algebra.apply(algebra.identity(x.shape), x), x)


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_powers_equal_repeated_steps(op, rng):
    algebra = ALGEBRAS[op]
    x, a = lanes(rng, 256), operands(rng, op, 256)
    f = algebra.of_operand(a.astype(np.int64))
    for n in (0, 1, 2, 5, 32, 33, 34, 41):
        np.testing.assert_array_equal(algebra.apply(algebra.power(f, n), x), by_steps(op, x, [a] * n), err_msg=n)


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_a_million_repetitions_collapse_exactly(op, rng):
    algebra = ALGEBRAS[op]
    x, a = lanes(rng, 256), operands(rng, op, 256)
    f = algebra.of_operand(a.astype(np.int64))
    n = 1_000_003
    got = algebra.apply(algebra.power(f, n), x)
    if op == AluOp.ADD:
        want = ((x.astype(np.int64) + n * a.astype(np.int64)) + 2**31) % 2**32 - 2**31
    elif op == AluOp.MUL:
        want = np.array([(int(v) * pow(int(c) % 2**32, n, 2**32) + 2**31) % 2**32 - 2**31 for v, c in zip(x, a)])
    else:                                  # MIN, MAX and shifts stop changing within 33 steps
        want = by_steps(op, x, [a] * 40)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_per_entry_counts_and_run_reduction(op, rng):
    algebra = ALGEBRAS[op]
    entries, lanes_per = 6, 4
    x = lanes(rng, (entries, lanes_per))
    a = operands(rng, op, (entries, lanes_per))
    counts = np.array([0, 1, 2, 7, 33, 3])
    f = algebra.of_operand(a.astype(np.int64))
    got = algebra.apply(algebra.power(f, counts), x)
    for e in range(entries):
        np.testing.assert_array_equal(got[e], by_steps(op, x[e], [a[e]] * counts[e]), err_msg=e)
    # runs [0, 3), [3, 4), [4, 10) of functions, each composed in order
    seq = operands(rng, op, (10, lanes_per))
    starts = np.array([0, 3, 4])
    runs = algebra.reduce_runs(algebra.of_operand(seq.astype(np.int64)), starts)
    y = lanes(rng, (3, lanes_per))
    for r, (lo, hi) in enumerate(zip(starts, [3, 4, 10])):
        np.testing.assert_array_equal(algebra.apply(runs[r], y[r]), by_steps(op, y[r], list(seq[lo:hi])), err_msg=r)
