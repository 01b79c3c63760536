"""Legal instructions whose work no folding removes (steps that all differ, or that read one
another one by one, by the billion) stop with WorkLimitExceeded naming the instruction,
quickly, instead of simulating for hours; below the limit the same kind of instruction runs
and equals the reference model; the limit can be raised."""
import time

import numpy as np
import pytest

from vdla.hw import AluInsn, AluOp, GemmInsn, Uop, load_config
from vdla.simulator import Simulator, SimulatorError, WorkLimitExceeded
from vdla.simulator.reference import ReferenceMachine
from vdla.simulator.semantics import execute
from vdla.simulator.state import OnChipState
from vdla.simulator.work_limit import DEFAULT_LIMIT

CFG = load_config("pynq")
TOP = 16383
REFUSAL_BOUND_S = 30     # a refusal takes well under a second; this only catches a hang


def state_with(rng, table, max_insn_work=None):
    state = OnChipState(CFG) if max_insn_work is None else OnChipState(CFG, max_insn_work)
    state.acc[:] = rng.integers(-2**20, 2**20, state.acc.shape)
    state.inp[:] = rng.integers(-128, 128, state.inp.shape)
    state.wgt[:] = rng.integers(-128, 128, state.wgt.shape)
    for k, u in enumerate(table):
        state.uop_dst[k], state.uop_src[k], state.uop_wgt[k] = u.dst, u.src, u.wgt
    return state


HOURS_OF_WORK = {
    # 1024 x 2048 x 8192 GEMM steps, every one a different (dst, src, wgt): 3 min on the hardware
    "gemm_distinct": ([Uop(k % 1024, 0, k % CFG.wgt_depth) for k in range(CFG.uop_depth)],
                      GemmInsn(uop_begin=0, uop_end=CFG.uop_depth, iter_out=1024, iter_in=CFG.inp_depth,
                               dst_factor_out=1, src_factor_in=1)),
    # x[d] += x[d + 1] over 2047 entries, 16383^2 times: every pass reads the last one's results
    "alu_own_results": ([Uop(d, d + 1) for d in range(CFG.acc_depth - 1)],
                        AluInsn(uop_begin=0, uop_end=CFG.acc_depth - 1, iter_out=TOP, iter_in=TOP,
                                alu_opcode=AluOp.ADD)),
}


@pytest.mark.parametrize("case", sorted(HOURS_OF_WORK))
def test_hours_of_distinct_work_are_refused_naming_the_instruction(case, rng):
    table, insn = HOURS_OF_WORK[case]
    state = state_with(rng, table)
    begin = time.perf_counter()
    with pytest.raises(WorkLimitExceeded) as err:
        execute(insn, 7, state, np.zeros(16, np.uint8))
    assert time.perf_counter() - begin < REFUSAL_BOUND_S
    assert isinstance(err.value, SimulatorError) and err.value.insn_index == 7
    assert str(err.value).startswith("instruction 7: ")
    assert "max_insn_work" in str(err.value)


def test_a_raised_limit_simulates_what_the_default_refuses_and_equals_the_reference(rng):
    # x[d] += x[d + 1] over 600 entries (too many for a matrix power), 8 x 8 passes in order
    table = [Uop(d, d + 1) for d in range(600)]
    insn = AluInsn(uop_begin=0, uop_end=600, iter_out=8, iter_in=8, alu_opcode=AluOp.ADD)
    with pytest.raises(WorkLimitExceeded):
        execute(insn, 0, state_with(np.random.default_rng(1), table, max_insn_work=10_000), None)
    state = state_with(np.random.default_rng(1), table, max_insn_work=1 << 30)
    ref = ReferenceMachine(CFG, np.zeros(16, dtype=np.uint8))
    ref.acc[:] = state.acc
    for k, u in enumerate(table):
        ref.uop[k] = (u.dst, u.src, u.wgt)
    execute(insn, 0, state, None)
    ref.execute(insn, 0)
    assert np.array_equal(state.acc, ref.acc)
    assert not np.array_equal(state.acc, state_with(np.random.default_rng(1), table).acc)


def test_simulator_takes_the_limit_and_compiled_sized_work_is_far_below_it():
    assert Simulator(CFG).max_insn_work == DEFAULT_LIMIT
    assert Simulator(CFG, max_insn_work=5).max_insn_work == 5
    # the largest instruction the compiler emits for ResNet-18 spends ~32k units (measured with
    # benchmarks/vdla_ops.py); the default leaves two orders of magnitude above that
    assert DEFAULT_LIMIT >= 100 * 32_256
