"""Seeded random programs (vdla.simulator.random_program): RTL against the simulator.

Every program (all opcodes and memory types, padding, every ALU op, random token patterns
that cannot deadlock) must leave the DRAM image bit-identical to the simulator's, end with
the same cycle count and report the same busy/stall/micro-op counters. Each chunk runs its
programs in one Verilator process.
"""
import pytest

from vdla.hw import load_config
from vdla.simulator.random_program import random_program

from .harness import Case, compare_cases

SMALL = {"LOG_BATCH": 1, "LOG_BLOCK": 3, "LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 12,
         "LOG_WGT_BUFF_SIZE": 13, "LOG_ACC_BUFF_SIZE": 13}
CONFIGS = {"pynq": "pynq", "small": SMALL, "ultra96": "ultra96"}
CHUNK = 50
# 4 x 50 seeds on the default config, 50 on a BATCH 2 / BLOCK 8 / small-SRAM instance and 50
# on the 128-bit-bus Ultra96 config (one beat per instruction / input element, 4 micro-ops a beat)
CASES = [("pynq", c) for c in range(4)] + [("small", 0), ("ultra96", 0)]


def random_cases(config, seeds) -> list[Case]:
    cases = []
    for seed in seeds:
        p = random_program(config, seed)
        cases.append(Case(f"{config.name} seed {seed}", p.dram, p.insn_addr, p.insn_count, p.insns,
                          config.out_elem_bytes))
    return cases


@pytest.mark.parametrize("name,chunk", CASES)
def test_rtl_matches_simulator_on_random_programs(name, chunk, tmp_path):
    config = load_config(CONFIGS[name])
    cases = random_cases(config, range(chunk * CHUNK, (chunk + 1) * CHUNK))
    failures = compare_cases(config, cases, tmp_path)
    assert not failures, "\n".join(failures[:10])
