"""ALU steps whose operands earlier steps wrote (vdla.simulator.alu_in_order): running a list of
steps in stretches, with and without an algebra, and repeating a body many times (matrix powers for
ADD and MUL, cycle detection for the rest) all equal the step-by-step loop over vdla.hw's `lane_op`."""
import numpy as np
import pytest

from vdla.hw import AluOp
from vdla.hw.alu_ops import lane_op
from vdla.simulator.alu_algebra import ALGEBRAS
from vdla.simulator.alu_in_order import repeat_in_order, run_in_order

from .test_alu_algebra import OPS, lanes, operands


def step_by_step(op, dst, src, values, reps=1):
    values = values.copy()
    for _ in range(reps):
        for d, s in zip(dst, src):
            values[d] = lane_op(op, values[d], values[s])
    return values


class FlatNest:
    """The two things repeat_in_order asks of a loop nest: the dst/src entry of each flat step,
    and chunks of steps."""

    def __init__(self, dst, src, chunk=5):
        self.fields, self.chunk = {"dst": dst, "src": src}, chunk

    def indices(self, field, first, stop):
        return self.fields[field][first:stop]

    def chunks(self, bytes_per_step, first, stop):
        for a in range(first, stop, self.chunk):
            yield a, min(a + self.chunk, stop)


def _program(rng, op, entries, steps):
    dst = rng.integers(0, entries, steps)
    src = rng.integers(0, entries, steps)
    values = lanes(rng, (entries, 4))
    if op == AluOp.SHR:                 # sources that are shift amounts, so shifts do not vanish at once
        values[entries // 2:] = operands(rng, op, (entries - entries // 2, 4)) % 8
    return dst, src, values


@pytest.mark.parametrize("with_algebra", [False, True], ids=["plain", "algebra"])
@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_steps_in_stretches_equal_the_loop(op, with_algebra, rng):
    algebra = ALGEBRAS[op]
    for entries, steps in ((3, 40), (16, 200), (64, 64)):
        dst, src, values = _program(rng, op, entries, steps)
        want = step_by_step(op, dst, src, values)
        got = values.copy()
        run_in_order(algebra.step, dst, src, got, algebra if with_algebra else None)
        np.testing.assert_array_equal(got, want, err_msg=f"{entries} entries, {steps} steps")


@pytest.mark.parametrize("reps", [1, 2, 7, 100])
@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_a_repeated_body_equals_the_loop(op, reps, rng):
    algebra = ALGEBRAS[op]
    dst, src, values = _program(rng, op, 5, 12)
    want = step_by_step(op, dst, src, values, reps)
    got = values.copy()
    repeat_in_order(algebra, FlatNest(dst, src), 0, len(dst), reps, got, bytes_per_step=16)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", [AluOp.ADD, AluOp.MUL, AluOp.MIN], ids=["ADD", "MUL", "MIN"])
def test_a_million_repetitions_take_a_matrix_power_or_a_cycle(op, rng):
    """10^6 passes of a 12-step body, checked against the loop run to the same point: ADD and MUL
    are linear (their result for R passes is compared with R = 10^6 computed as 1000 x 1000);
    MIN reaches a fixed point."""
    algebra = ALGEBRAS[op]
    dst, src, values = _program(rng, op, 5, 12)
    nest = FlatNest(dst, src)
    million = values.copy()
    repeat_in_order(algebra, nest, 0, len(dst), 10**6, million, bytes_per_step=16)
    thousand_twice = values.copy()
    for _ in range(1000):
        repeat_in_order(algebra, nest, 0, len(dst), 1000, thousand_twice, bytes_per_step=16)
    np.testing.assert_array_equal(million, thousand_twice)
    if op == AluOp.MIN:
        np.testing.assert_array_equal(million, step_by_step(op, dst, src, values, 50))
