"""Legal instructions at the ISA's limits (iter_out = iter_in = 16383, every micro-op of the
buffer) simulate exactly and end: results against closed forms computed here with Python
integers. Before issue 11 an ALU with an immediate ran one Python iteration per micro-op
(16383 x 1000 x 2 steps: minutes) and GEMM built all its indices at once (MemoryError)."""
import time

import numpy as np
import pytest

from vdla.hw import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Uop, load_config
from vdla.hw.alu_ops import LANE_OPS, SHR_MAX, SHR_MIN, lane_op, shift_amount, wrap
from vdla.simulator.semantics import execute
from vdla.simulator.state import OnChipState

from .streams import put, run_stream

CFG = load_config("pynq")
TOP = 16383          # the 14-bit iteration fields' maximum
MUST_END_S = 60      # "must not hang" bound: these take well under a second


def repeated(op: AluOp, x: int, b: int, n: int) -> int:
    """op(., b) applied n times to the int32 x: one lane step (vdla.hw.alu_ops) by the operand
    that n steps amount to, in closed form with Python integers. MIN and MAX: b itself;
    ADD: n*b; MUL: b^n (both mod 2^32); SHR: n times the amount, where a right shift past 31
    only repeats the sign and a left shift of 32 or more leaves 0."""
    if n == 0:
        return x
    if op == AluOp.ADD:
        b = n * b % 2**32
    elif op == AluOp.MUL:
        b = pow(b, n, 2**32)
    elif op == AluOp.SHR:
        b = min(max(int(shift_amount(b)) * n, SHR_MIN), SHR_MAX)
    return int(lane_op(op, x, wrap(b)))


def looked_up(table: np.ndarray, x: int, n: int) -> int:
    """x after n table lookups, by walking the codes until they repeat (the walk cycles
    within 257 steps: after the first lookup a value is one of 256 codes)."""
    seen, path = {}, []
    for step in range(n):
        x = int(table[min(max(x, -128), 127) + 128])
        if x in seen:
            first = seen[x]
            return path[first + (n - 1 - step) % (step - first)]
        seen[x] = step
        path.append(x)
    return x


def fresh(rng, uops):
    state = OnChipState(CFG)
    state.acc[:] = rng.integers(-2**31, 2**31, state.acc.shape)
    for k, (d, s) in enumerate(uops):
        state.uop_dst[k], state.uop_src[k] = d, s
    return state


def timed(fn):
    begin = time.perf_counter()
    result = fn()
    assert time.perf_counter() - begin < MUST_END_S
    return result


@pytest.mark.parametrize("op,imm", [(AluOp.ADD, 3), (AluOp.MUL, -3), (AluOp.MIN, -7), (AluOp.MAX, 9),
                                    (AluOp.SHR, 1), (AluOp.SHR, -1), (AluOp.SHR, 0)])
def test_alu_immediate_two_uops_16383_by_1000(op, imm, rng):
    state = fresh(rng, [(0, 0), (1, 0)])
    before = state.acc[:2].astype(np.int64)
    insn = AluInsn(uop_begin=0, uop_end=2, iter_out=TOP, iter_in=1000, alu_opcode=op, use_imm=True, imm=imm)
    assert timed(lambda: execute(insn, 0, state, None)) == TOP * 1000 * 2
    expect = [[[repeated(op, int(v), imm, TOP * 1000) for v in row] for row in entry] for entry in before]
    np.testing.assert_array_equal(state.acc[:2], expect)
    np.testing.assert_array_equal(state.out[:2], np.array(expect, dtype=np.int64).astype(np.int8))


@pytest.mark.parametrize("op", LANE_OPS)
def test_alu_at_max_iterations_and_every_micro_op(op, rng):
    """8192 micro-ops over 512 destinations (each written 16 times a pass), sources in the
    other half of the accumulator, 16383 x 16383 passes: 2^40 micro-op steps."""
    n = CFG.uop_depth
    uops = [(k % 512, 1024 + k % 16) for k in range(n)]
    state = fresh(rng, uops)
    state.lut[:] = rng.integers(-128, 128, state.lut.shape)
    state.acc[1024:1040] = rng.integers(-3, 4, (16, 1, 16))   # SHR amounts one sign per lane below
    state.acc[1024:1040] = np.abs(state.acc[1024:1040]) * np.sign(rng.integers(-1, 2, (1, 1, 16)))
    before = state.acc.astype(np.int64)
    insn = AluInsn(uop_begin=0, uop_end=n, iter_out=TOP, iter_in=TOP, alu_opcode=op)
    assert timed(lambda: execute(insn, 0, state, None)) == TOP * TOP * n
    reps = TOP * TOP
    for d in (0, 7, 511):
        sources = [1024 + k % 16 for k in range(n) if k % 512 == d]
        for lane in (0, 5, 15):
            x = int(before[d, 0, lane])
            operands = [int(before[s, 0, lane]) for s in sources]
            if op == AluOp.FLUSH:   # each step writes x + b back and leaves 0: the last step's b decides OUT
                assert state.acc[d, 0, lane] == 0 and state.out[d, 0, lane] == (operands[-1] + 128) % 256 - 128, (d, lane)
                continue
            if op == AluOp.LUT:   # the operands are read and ignored
                x = looked_up(state.lut.reshape(-1), x, len(sources) * reps)
            elif op in (AluOp.ADD, AluOp.MUL, AluOp.MIN, AluOp.MAX):
                for b in operands:
                    x = repeated(op, x, b, reps)
            else:   # one sign per lane: the shifts of a lane add up
                total = sum(int(shift_amount(b)) for b in operands) * reps
                x = repeated(op, x, 1 if total > 0 else -1, abs(total)) if total else x
            assert state.acc[d, 0, lane] == x, (d, lane)
    np.testing.assert_array_equal(state.acc[512:], before[512:])


def test_gemm_at_max_iterations_every_micro_op_no_memory_error(rng):
    n = CFG.uop_depth
    state = OnChipState(CFG)
    state.inp[:8] = rng.integers(-128, 128, (8, 1, 16))
    state.wgt[:4] = rng.integers(-128, 128, (4, 16, 16))
    state.acc[:] = rng.integers(-2**31, 2**31, state.acc.shape)
    before = state.acc.astype(np.int64)
    for k in range(n):
        state.uop_dst[k], state.uop_src[k], state.uop_wgt[k] = k % 2, k % 8, k % 4
    insn = GemmInsn(uop_begin=0, uop_end=n, iter_out=TOP, iter_in=TOP)
    assert timed(lambda: execute(insn, 0, state, None)) == TOP * TOP * n
    for d in (0, 1):
        body = sum(state.inp[k % 8, 0].astype(np.int64) @ state.wgt[k % 4].astype(np.int64).T
                   for k in range(d, n, 2))
        expect = (before[d, 0] + body * TOP * TOP + 2**31) % 2**32 - 2**31
        np.testing.assert_array_equal(state.acc[d, 0], expect)
    np.testing.assert_array_equal(state.acc[2:], before[2:])


def test_a_source_that_is_also_a_destination_runs_in_order_until_nothing_changes(rng):
    """x = x + x on two entries, 16383 x 16383 times: doubling clears 32 bits after 32 passes,
    so the ordered engine stops at the fixed point instead of running 2^28 passes."""
    state = fresh(rng, [(0, 0), (1, 1)])
    insn = AluInsn(uop_begin=0, uop_end=2, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.ADD)
    timed(lambda: execute(insn, 0, state, None))
    assert not state.acc[:2].any()
    # a MIN ring: each entry takes its neighbour's minimum, which goes round until all agree
    state = fresh(rng, [(0, 1), (1, 2), (2, 3), (3, 0)])
    lowest = state.acc[:4].min(axis=0)
    insn = AluInsn(uop_begin=0, uop_end=4, iter_out=TOP, iter_in=1, alu_opcode=AluOp.MIN)
    timed(lambda: execute(insn, 0, state, None))
    np.testing.assert_array_equal(state.acc[:4], np.broadcast_to(lowest, (4, 1, 16)))


def test_whole_stream_with_a_max_size_alu_keeps_its_cycle_count():
    """Through Simulator.run: the ALU's data and the schedule's exact cycle count."""
    dram = np.zeros(2 << 20, dtype=np.uint8)
    put(dram, 0, CFG.isa.encode_uops([Uop(0), Uop(1)]))
    insns = [MemInsn(memory_type=MemType.UOP, x_size=2),
             AluInsn(uop_begin=0, uop_end=2, iter_out=TOP, iter_in=TOP, alu_opcode=AluOp.ADD, use_imm=True, imm=1),
             FinishInsn()]
    result = timed(lambda: run_stream(insns, dram))
    t = CFG.timing
    alu_cycles = t.alu_setup_cycles + TOP * TOP * 2 * t.alu_imm_cycles_per_uop + t.alu_pipeline_depth
    start, end = result.insn_times[1]
    assert end - start == alu_cycles and result.cycles == end + t.finish_cycles
    assert result.stats.alu_uops == TOP * TOP * 2


def body_power(reps: int, modulus: int | None = None):
    """[[1, 1], [1, 2]]^reps -- the body x0 += x1; x1 += x0 -- with Python integers."""
    result, base = [[1, 0], [0, 1]], [[1, 1], [1, 2]]

    def mul(p, q):
        out = [[sum(p[i][k] * q[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
        return [[v % modulus for v in row] for row in out] if modulus else out
    while reps:
        if reps & 1:
            result = mul(result, base)
        base, reps = mul(base, base), reps >> 1
    return result


@pytest.mark.parametrize("op", [AluOp.ADD, AluOp.MUL])
@pytest.mark.parametrize("reps", [1000, TOP * TOP])
def test_add_and_mul_bodies_that_read_their_own_writes_repeat_as_matrix_powers(op, reps, rng):
    """x0 op= x1; x1 op= x0 (Fibonacci-like: no fixed point, no short cycle) repeated. The
    oracle: exact exponents at 1000 passes; at 16383^2 passes, exponents mod 2^30 (the order
    of every odd residue mod 2^32), and any even value raised that far is 0 mod 2^32."""
    state = fresh(rng, [(0, 1), (1, 0)])
    if op == AluOp.MUL:   # odd, even and zero lanes
        state.acc[:2] = rng.integers(-2**31, 2**31, (2, 1, 16)) | 1
        state.acc[0, 0, :4] = [0, 2, 6, -4]
    x = state.acc[:2, 0].astype(np.int64) % 2**32
    iters = dict(iter_out=TOP, iter_in=TOP) if reps == TOP * TOP else dict(iter_out=reps)
    timed(lambda: execute(AluInsn(uop_begin=0, uop_end=2, alu_opcode=op, **iters), 0, state, None))
    exact = reps < 10**4
    m = body_power(reps, None if exact else 2**32 if op == AluOp.ADD else 2**30)
    for lane in range(16):
        a, b = int(x[0, lane]), int(x[1, lane])
        for e in (0, 1):
            if op == AluOp.ADD:
                want = (m[e][0] * a + m[e][1] * b) % 2**32
            elif exact or (a % 2 and b % 2):
                want = pow(a, m[e][0], 2**32) * pow(b, m[e][1], 2**32) % 2**32
            else:
                want = 0
            assert int(state.acc[e, 0, lane]) % 2**32 == want, (e, lane)
