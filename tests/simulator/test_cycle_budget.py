"""A launch with a cycle budget stops at the budget: the schedule shows that FINISH cannot
end in time before any data is computed, and a stream far longer than the budget is not
even scheduled to its end. Within the budget nothing changes, to the cycle."""
import numpy as np
import pytest

from vdla.hw import FinishInsn, GemmInsn, MemInsn, MemType, Uop, load_config
from vdla.simulator import CycleBudgetExceeded, Simulator, SimulatorError
from vdla.simulator.random_program import random_program

from .streams import INSN_BASE, put, run_stream

CFG = load_config("pynq")


def long_gemm_stream():
    """About 655k cycles: a 640 x 1024-step GEMM."""
    dram = np.zeros(2 << 20, dtype=np.uint8)
    put(dram, 0, CFG.isa.encode_uops([Uop(0, 0, 0)]))
    insns = [MemInsn(memory_type=MemType.UOP, x_size=1),
             GemmInsn(uop_begin=0, uop_end=1, iter_out=640, iter_in=1024, dst_factor_in=1, src_factor_in=1),
             FinishInsn()]
    return insns, dram


def test_budget_stops_before_any_data_is_computed(monkeypatch):
    insns, dram = long_gemm_stream()
    assert run_stream(insns, dram.copy()).cycles > 655_000

    def never(*args):
        raise AssertionError("data was computed past the budget")
    monkeypatch.setattr("vdla.simulator.simulator.execute", never)
    with pytest.raises(CycleBudgetExceeded) as err:
        stream = CFG.isa.encode_stream(insns)
        dram[INSN_BASE:INSN_BASE + stream.size] = stream
        Simulator(CFG).run(dram, INSN_BASE, len(insns), max_cycles=1000)
    assert err.value.insn_index == 1 and err.value.budget == 1000
    assert isinstance(err.value, SimulatorError)
    assert "instruction 1: GemmInsn runs on compute until cycle" in str(err.value)
    assert "cannot complete within the budget of 1000 cycles" in str(err.value)


def test_a_stream_much_longer_than_the_budget_is_cut_at_dispatch():
    n = 50_000
    insns = [MemInsn(memory_type=MemType.INP, x_size=0) for _ in range(n)] + [FinishInsn()]
    with pytest.raises(CycleBudgetExceeded) as err:
        Simulator(CFG).run_insns(insns, np.zeros(16, dtype=np.uint8), max_cycles=500)
    assert err.value.insn_index < 1000   # stopped near the budget, far before instruction 50000
    assert "is dispatched at cycle" in str(err.value)


def test_the_budget_is_exact_and_changes_nothing_below_it():
    for seed in range(12):
        program = random_program(CFG, seed)
        free = Simulator(CFG).run(program.fresh_dram(), program.insn_addr, program.insn_count)
        tight = Simulator(CFG).run(program.fresh_dram(), program.insn_addr, program.insn_count,
                                   max_cycles=free.cycles)
        assert tight.cycles == free.cycles
        np.testing.assert_array_equal(tight.dram, free.dram)
        np.testing.assert_array_equal(tight.insn_times, free.insn_times)
        with pytest.raises(CycleBudgetExceeded):
            Simulator(CFG).run(program.fresh_dram(), program.insn_addr, program.insn_count,
                               max_cycles=free.cycles - 1)
