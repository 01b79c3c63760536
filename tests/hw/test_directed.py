"""Directed programs on the whole accelerator: DMA padding (also longer than the read latency),
the GEMM core, every ALU op, the ALU's lookup table (padded LOAD LUT, ALU LUT), the requantizer
on OUT's write-back (SETQ, GEMM and ALU with the requant bit), ALU FLUSH, DEPTHWISE, multi-burst
rows, a full command queue. Data is checked against numpy (an oracle that shares nothing with
the RTL or the simulator), cycles and counters against the simulator.
"""
import numpy as np
import pytest

from vdla.hw import load_config

from . import programs
from .harness import compare_cases, problems, run_cases

BUILDERS = [programs.padded_loads, programs.padded_loads_min, programs.padded_loads_past_latency,
            programs.gemm_with_bias, programs.gemm_extreme_operands,
            programs.alu_ops, programs.lookup_table, programs.requantizer, programs.flush, programs.depthwise,
            programs.long_rows, programs.page_crossing,
            programs.full_command_queue]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    config = load_config("pynq")
    rng = np.random.default_rng(3)
    built = [build(config, rng) for build in BUILDERS]
    results = run_cases(config, [case for case, _ in built], tmp_path_factory.mktemp("directed"))
    return {case.name: (outcome, expected) for (case, expected), outcome in zip(built, results)}


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_directed_program_matches_numpy_and_simulator(outcomes, builder):
    config = load_config("pynq")
    name = builder(config, np.random.default_rng(3))[0].name
    outcome, expected = outcomes[name]
    assert not problems(outcome), "\n".join(problems(outcome))
    for addr, want in expected.items():
        got = outcome.rtl_dram[addr:addr + want.size]
        np.testing.assert_array_equal(got, want, err_msg=f"{name}: DRAM at 0x{addr:x} differs from numpy")


def test_full_command_queue_really_stalls_fetch(outcomes):
    """The queue case is only a test of back-pressure if compute idles for its tokens while
    more than cmd_queue_depth instructions wait (otherwise fetch never sees a full queue)."""
    outcome, _ = outcomes["full command queue"]
    stats = outcome.record["stats"]
    assert stats["token_stall_cycles"]["compute"] > 100
    assert outcome.case.insn_count > load_config("pynq").timing.cmd_queue_depth + 2


def test_harness_reports_timing_and_data_differences(outcomes, tmp_path):
    """The comparison is not vacuous: a simulator with one more cycle of DRAM latency, or a
    flipped DRAM byte, must be reported."""
    import dataclasses

    from vdla.hw import Timing
    from vdla.simulator import Simulator
    outcome = dataclasses.replace(outcomes["GEMM with bias, two loop levels"][0])
    slower = load_config("pynq").to_dict()
    slower["timing"] = {**Timing().to_dict(), "dram_read_latency": Timing().dram_read_latency + 1}
    case = outcome.case
    dram = case.dram.copy()
    outcome.sim = Simulator(load_config(slower)).run(dram, case.insn_addr, case.insn_count)
    assert any("cycles" in p for p in problems(outcome))
    outcome.rtl_dram = outcome.rtl_dram.copy()
    outcome.rtl_dram[outcome.rtl_dram.size - 1] ^= 1
    assert any("DRAM differs" in p for p in problems(outcome))


def test_traced_run_names_the_first_instruction_whose_timing_differs(outcomes, tmp_path):
    """Per-instruction start cycles from the RTL equal the simulator's; against a simulator
    with one more cycle of DRAM latency the report names the first instruction that moves."""
    from vdla.hw import Timing
    from vdla.simulator import Simulator
    config = load_config("pynq")
    case = outcomes["GEMM with bias, two loop levels"][0].case
    traced = run_cases(config, [case], tmp_path, trace=True)[0]
    starts = traced.record["starts"]
    assert sum(len(v) for v in starts.values()) == case.insn_count
    assert problems(traced) == []
    slower = config.to_dict()
    slower["timing"] = {**Timing().to_dict(), "dram_read_latency": Timing().dram_read_latency + 1}
    traced.sim = Simulator(load_config(slower)).run(case.dram.copy(), case.insn_addr, case.insn_count)
    report = "\n".join(problems(traced))
    assert "first differing instruction 0" in report, report
