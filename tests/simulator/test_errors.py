"""Bad streams give a clear error naming the instruction and the cause, never a hang."""
import numpy as np
import pytest

from vdla.hw import AluInsn, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop, load_config
from vdla.simulator import (DeadlockError, HazardError, MemoryAccessError, Simulator, StreamError,
                            TokenError)

from .streams import put, run_stream

CFG = load_config("pynq")


def load_inp(**kw):
    return MemInsn(memory_type=MemType.INP, dram_base=0, y_size=1, x_size=4, x_stride=4, **kw)


def store(**kw):
    return MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, dram_base=0x8000 // 16, y_size=1, x_size=4,
                   x_stride=4, **kw)


def test_missing_token_is_a_deadlock_naming_module_instruction_and_queue():
    # compute waits for a load->compute token that the load never pushes
    insns = [load_inp(), GemmInsn(reset=True, pop_prev=True), FinishInsn()]
    with pytest.raises(DeadlockError) as err:
        run_stream(insns)
    msg = str(err.value)
    assert "compute at instruction 1 waits for token on l2c (0 available, 1 needed)" in msg
    assert err.value.stuck == [{"module": "compute", "insn": 1, "waits_for": ["token on l2c (0 available, 1 needed)"]}]


def test_circular_wait_names_both_modules():
    insns = [load_inp(pop_next=True, push_next=True),      # load waits for compute
             GemmInsn(reset=True, pop_prev=True, push_prev=True),  # compute waits for load
             FinishInsn()]
    with pytest.raises(DeadlockError, match=r"load at instruction 0 waits for token on c2l.*compute at instruction 1 waits for token on l2c"):
        run_stream(insns)


def test_leftover_token_at_finish():
    insns = [load_inp(push_next=True), GemmInsn(reset=True), FinishInsn()]
    with pytest.raises(TokenError, match=r"instruction 2: 1 token\(s\) left in queue l2c at FINISH"):
        run_stream(insns)


def test_flag_the_module_cannot_use():
    with pytest.raises(TokenError, match="instruction 0: MemInsn runs on the load module, which has no pop_prev queue"):
        run_stream([load_inp(pop_prev=True), FinishInsn()])


def test_out_of_range_dram_address():
    bad = MemInsn(memory_type=MemType.INP, dram_base=(2 << 20) // 16 - 2, y_size=1, x_size=4, x_stride=4,
                  push_next=True)
    with pytest.raises(MemoryAccessError, match=r"instruction 0: LOAD INP reads/writes DRAM bytes up to .*dram_base"):
        run_stream([bad, FinishInsn(pop_prev=True)])


def test_out_of_range_sram_index():
    bad = MemInsn(memory_type=MemType.WGT, sram_base=CFG.wgt_depth - 1, y_size=1, x_size=2, x_stride=2,
                  push_next=True)
    with pytest.raises(MemoryAccessError, match="instruction 0: LOAD WGT: SRAM range \\[1023, 1025\\) from field sram_base exceeds the buffer depth 1024"):
        run_stream([bad, FinishInsn(pop_prev=True)])


def test_out_of_range_uop_index_names_the_field():
    dram = np.zeros(2 << 20, dtype=np.uint8)
    put(dram, 0, CFG.isa.encode_uops([Uop(dst=CFG.acc_depth - 1)]))
    insns = [MemInsn(memory_type=MemType.UOP, x_size=1),
             GemmInsn(reset=True, uop_begin=0, uop_end=1, iter_out=2, dst_factor_out=1), FinishInsn()]
    with pytest.raises(MemoryAccessError, match="instruction 1: GEMM accumulator index 2048 \\(micro-op field dst, loop step 1\\)"):
        run_stream(insns, dram)


def test_accumulator_hazard_is_flagged():
    dram = np.zeros(2 << 20, dtype=np.uint8)
    put(dram, 0, CFG.isa.encode_uops([Uop(dst=5, src=0, wgt=0)]))
    # the same micro-op twice in a row (iter_in=2, no dst stride): entry 5 updated on consecutive steps
    insns = [MemInsn(memory_type=MemType.UOP, x_size=1), GemmInsn(uop_begin=0, uop_end=1, iter_in=2), FinishInsn()]
    with pytest.raises(HazardError, match="instruction 1: GEMM updates accumulator entry 5 at micro-op steps 0 and 1"):
        run_stream(insns, dram)
    insns[1] = AluInsn(uop_begin=0, uop_end=1, iter_in=2, use_imm=True, imm=1)
    with pytest.raises(HazardError, match="ALU updates accumulator entry 5"):
        run_stream(insns, dram)


def test_no_finish_and_instruction_after_finish():
    with pytest.raises(StreamError, match="no FINISH"):
        run_stream([load_inp()])
    with pytest.raises(StreamError, match="instruction 1 follows FINISH"):
        run_stream([FinishInsn(), load_inp()])


def test_store_still_running_at_finish():
    with pytest.raises(StreamError, match="instruction 0: MemInsn on the store module is still running"):
        run_stream([store(), FinishInsn()])


def test_wrong_memory_types():
    with pytest.raises(StreamError, match="STORE must read the OUT buffer"):
        run_stream([store(push_prev=True).replace(memory_type=MemType.ACC), FinishInsn(pop_next=True)])
    with pytest.raises(StreamError, match="LOAD cannot target the OUT buffer"):
        run_stream([MemInsn(memory_type=MemType.OUT, x_size=1, y_size=1), FinishInsn()])


def test_token_queue_overflow():
    depth = CFG.timing.token_queue_depth
    # the load pushes depth+1 tokens before compute pops any (compute first waits for a long GEMM)
    insns = [load_inp(push_next=True) for _ in range(depth + 1)]
    insns += [GemmInsn(reset=True, uop_end=1, iter_out=16000)]
    insns += [GemmInsn(reset=True, pop_prev=True) for _ in range(depth + 1)] + [FinishInsn()]
    with pytest.raises(TokenError, match=f"queue l2c holds {depth + 1} tokens at once, more than its depth {depth}"):
        run_stream(insns)


def test_misaligned_or_out_of_range_instruction_fetch():
    sim = Simulator(CFG)
    dram = np.zeros(4096, dtype=np.uint8)
    with pytest.raises(StreamError, match="not 16-byte aligned"):
        sim.run(dram, 8, 1)
    with pytest.raises(MemoryAccessError, match="reads past the end of DRAM"):
        sim.run(dram, 4096 - 16, 2)


def test_undecodable_bytes_are_the_simulators_decode_error_naming_the_instruction():
    from vdla.hw.isa import InsnDecodeError
    from vdla.simulator import DecodeError, SimulatorError
    good = CFG.isa.encode_stream([FinishInsn()])
    cases = [(np.concatenate([good, np.frombuffer((6).to_bytes(16, "little"), np.uint8)]), 1, "unknown opcode 6"),
             (np.frombuffer(((7 << 7) | 1).to_bytes(16, "little"), np.uint8), 0, "unknown memory_type 7")]      # (every 3-bit ALU opcode is defined: FLUSH is 7)
    for words, index, what in cases:
        dram = np.zeros(4096, dtype=np.uint8)
        dram[:words.size] = words
        with pytest.raises(DecodeError) as err:
            Simulator(CFG).run(dram, 0, words.size // 16)
        assert err.value.insn_index == index and str(err.value).startswith(f"instruction {index}: {what}")
        assert isinstance(err.value, (StreamError, SimulatorError)) and not isinstance(err.value, ValueError)
    # vdla.hw's decoder has its own class (a ValueError), carrying the index too
    with pytest.raises(InsnDecodeError) as err:
        CFG.isa.decode_stream(cases[0][0])
    assert err.value.insn_index == 1 and err.value.reason.startswith("unknown opcode 6")
