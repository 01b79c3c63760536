"""The Yosys netlist of the RTL (vdla.hw.rtl.sim.netlist: synth_xilinx up to its fine-grained
mapping, with the DSP48E1, block and LUT RAM primitives it maps to) runs programs as the RTL
does: random programs against the simulator (data, cycles, counters), directed ones against
numpy too (the GEMM's packed multipliers in DSPs at the operands' extremes, every ALU op, the
lookup table in LUT RAM, the requantizer's multiplier in DSPs, DMA bursts split at 4 KiB pages). On the small config; one Yosys run
and one Verilator build (cached like the RTL's), then a simulator process per program. More programs and other configs:
`python benchmarks/rtl_vs_sim.py --netlist`.

Found this way: Yosys read `~32'(x)` in vdla_dma_rd as a cast to ~32 bits and dropped the
`~`, so every micro-op LOAD read from DRAM address 0 or 4 (vdla.hw.rtl.sim.yosys_pitfalls).
"""
import numpy as np
import pytest

from vdla.hw import load_config

from .. import programs
from ..harness import compare_cases, problems, run_cases
from ..test_random_programs import SMALL, random_cases

pytestmark = pytest.mark.slow

DIRECTED = [programs.gemm_extreme_operands, programs.alu_ops, programs.lookup_table, programs.requantizer,
            programs.page_crossing]


@pytest.fixture(scope="module")
def netlist():
    from vdla.hw.rtl.sim.netlist import build_netlist
    return build_netlist(load_config(SMALL), quick=True)     # ten programs: the build dominates


def test_netlist_matches_the_simulator_on_random_programs(netlist, tmp_path):
    config = load_config(SMALL)
    failures = compare_cases(config, random_cases(config, range(3)), tmp_path, netlist=netlist)
    assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("builder", DIRECTED, ids=lambda b: b.__name__)
def test_netlist_matches_numpy_and_the_simulator_on_directed_programs(netlist, builder, tmp_path):
    config = load_config(SMALL)
    case, expected = builder(config, np.random.default_rng(3))
    outcome = run_cases(config, [case], tmp_path, netlist=netlist)[0]
    assert not problems(outcome), "\n".join(problems(outcome))
    for addr, want in expected.items():
        np.testing.assert_array_equal(outcome.rtl_dram[addr:addr + want.size], want,
                                      err_msg=f"{case.name}: DRAM at 0x{addr:x} differs from numpy")


def test_each_netlist_launch_starts_from_zeroed_srams(netlist, tmp_path):
    """The netlist has no sim_clear: two programs run one after the other must still each
    agree with the simulator (they would not in one simulator process: the second would
    read what the first left in the SRAMs)."""
    config = load_config(SMALL)
    cases = random_cases(config, [1, 1])
    assert compare_cases(config, cases, tmp_path, netlist=netlist) == []


def test_the_quick_build_compiles_its_cpp_unoptimized_and_leaves_make_alone(netlist):
    """quick=True: Verilator's C++ at -O0 (the build, not the ten programs, is this module's
    time), and MAKEFLAGS afterwards as before, so the process's RTL builds keep -Os."""
    import os
    compiles = [line for line in (netlist / "build.log").read_text().splitlines() if line.startswith("c++ ")]
    assert compiles and all("-Os" not in line.split() for line in compiles)
    assert any("-O0" in line.split() for line in compiles)
    assert "OPT_FAST" not in os.environ.get("MAKEFLAGS", "")
