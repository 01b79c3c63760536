"""Simulator.run(compute=False): the cycles, per-instruction times and counters of a full run and
every error a full run raises (the compiler times its schedule variants this way), without the
GEMM, DEPTHWISE and ALU results."""
import numpy as np
import pytest

from vdla.hw import AluInsn, AluOp, FinishInsn, GemmInsn, HwConfig, MemInsn, MemType, Uop, load_config
from vdla.simulator import HazardError, MemoryAccessError, Simulator, StreamError
from vdla.simulator.random_program import random_program

from .streams import INSN_BASE, put
from .test_random_programs import SMALL


@pytest.mark.parametrize("config", ["pynq", SMALL], ids=["pynq", "small"])
def test_the_timing_and_counters_of_a_full_run_without_its_results(config):
    config = load_config(config)
    unequal_outputs = 0
    for seed in range(30):
        program = random_program(config, seed)
        full = Simulator(config).run(program.fresh_dram(), program.insn_addr, program.insn_count)
        timed = Simulator(config).run(program.fresh_dram(), program.insn_addr, program.insn_count, compute=False)
        assert timed.cycles == full.cycles, seed
        np.testing.assert_array_equal(timed.insn_times, full.insn_times)
        assert timed.stats.to_dict() == full.stats.to_dict(), seed
        unequal_outputs += any(not np.array_equal(timed.dram[a:a + n], full.dram[a:a + n]) for a, n in program.outputs)
    assert unequal_outputs > 10, "compute=False computed the stored results after all"


def _run(insns, dram, compute, config=None):
    config = config or load_config("pynq")
    stream = config.isa.encode_stream(insns)
    dram[INSN_BASE:INSN_BASE + stream.size] = stream
    return Simulator(config).run(dram, INSN_BASE, len(insns), compute=compute)


@pytest.mark.parametrize("compute", [True, False])
def test_the_compute_engines_checks_hold_without_computing(compute):
    cfg = load_config("pynq")
    dram = np.zeros(2 << 20, dtype=np.uint8)
    put(dram, 0, cfg.isa.encode_uops([Uop(dst=5, src=0, wgt=0)]))
    uops = MemInsn(memory_type=MemType.UOP, x_size=1)
    engines = (GemmInsn(uop_begin=0, uop_end=1, iter_in=2), AluInsn(uop_begin=0, uop_end=1, iter_in=2, use_imm=True))
    for engine in engines:
        with pytest.raises(HazardError, match="updates accumulator entry 5 at micro-op steps 0 and 1"):
            _run([uops, engine, FinishInsn()], dram, compute)
    put(dram, 0, cfg.isa.encode_uops([Uop(dst=cfg.acc_depth - 1)]))
    with pytest.raises(MemoryAccessError, match="GEMM accumulator index 2048"):
        _run([uops, GemmInsn(uop_begin=0, uop_end=1, iter_out=2, dst_factor_out=1), FinishInsn()], dram, compute)
    wide = HwConfig.from_dict({"LOG_BATCH": 3, "LOG_BLOCK": 6, "LOG_INP_BUFF_SIZE": 16, "LOG_WGT_BUFF_SIZE": 18,
                               "LOG_ACC_BUFF_SIZE": 18})
    put(dram, 0, wide.isa.encode_uops([Uop(dst=0)]))
    with pytest.raises(StreamError, match="has no lookup table"):
        _run([uops, AluInsn(uop_begin=0, uop_end=1, alu_opcode=AluOp.LUT, use_imm=True), FinishInsn()], dram,
             compute, wide)
