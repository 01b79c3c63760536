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
# Every timing parameter moved: the RTL is generated from them, so it must follow.
RETIMED = {"timing": dict(dram_read_latency=7, dram_write_latency=3, fetch_burst_insns=5, cmd_queue_depth=3,
                          token_delay=2, dma_setup_cycles=3, gemm_setup_cycles=3, gemm_pipeline_depth=6,
                          alu_setup_cycles=4, alu_pipeline_depth=2, alu_tensor_cycles_per_uop=3,
                          alu_imm_cycles_per_uop=2, nop_cycles=2, finish_cycles=3, requant_pipeline_depth=5)}
# Other widths and depths throughout, and a bus no preset has: 32 bits (4 beats an
# instruction, 1 micro-op a beat), BATCH 2 x BLOCK 4 (8-byte input elements), SRAM depths
# that move every GEMM/ALU factor field (dst_factor_in starts the upper word). The RTL is
# built from its generated package, unchanged.
NARROW = {"LOG_BATCH": 1, "LOG_BLOCK": 2, "LOG_UOP_BUFF_SIZE": 10, "LOG_INP_BUFF_SIZE": 11,
          "LOG_WGT_BUFF_SIZE": 12, "LOG_ACC_BUFF_SIZE": 13, "bus_width_bits": 32,
          "timing": dict(dram_read_latency=5, fetch_burst_insns=3, cmd_queue_depth=4, token_delay=3,
                         gemm_pipeline_depth=5, alu_tensor_cycles_per_uop=4, alu_imm_cycles_per_uop=3,
                         requant_pipeline_depth=1)}
CONFIGS = {"pynq": "pynq", "small": SMALL, "ultra96": "ultra96", "retimed": RETIMED, "narrow": NARROW}
CHUNK = 50
# 4 x 50 seeds on the default config, 50 on a BATCH 2 / BLOCK 8 / small-SRAM instance, 50 on
# the 128-bit-bus Ultra96 config (one beat per instruction / input element, 4 micro-ops a
# beat), 50 with every timing parameter changed and 50 on the narrow instance
CASES = [("pynq", c) for c in range(4)] + [("small", 0), ("ultra96", 0), ("retimed", 0), ("narrow", 0)]


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
