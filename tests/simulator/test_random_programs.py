"""Seeded random programs: the fast simulator against the independent reference interpreter.

The reference (vdla.simulator.reference) is written straight from SPEC §3/§4 and shares no
code with the simulator, so agreement on the whole DRAM image over hundreds of random
legal programs (every opcode, memory type, padding, ALU op, token pattern) is the
simulator's functional oracle. The generator is itself checked: its programs cover the
ISA, never deadlock or race, and a seeded bug in the reference is caught by the comparison.
"""
import numpy as np
import pytest

from vdla.hw import load_config
from vdla.hw.alu_ops import shift_amount
from vdla.hw.depthwise import TAPS as DEPTHWISE_TAPS
from vdla.hw.isa import INSN_BYTES, AluInsn, AluOp, DepthwiseInsn, FinishInsn, GemmInsn, MemInsn, MemType, Opcode
from vdla.simulator import Simulator
from vdla.simulator import reference
from vdla.simulator.random_program import describe_mismatch, random_program
from vdla.simulator.reference import reference_run

# A second instance with BATCH 2, BLOCK 8 and small SRAMs: other field widths, top-of-SRAM indices.
SMALL = {"LOG_BATCH": 1, "LOG_BLOCK": 3, "LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 12,
         "LOG_WGT_BUFF_SIZE": 13, "LOG_ACC_BUFF_SIZE": 13}
CONFIGS = {"pynq": "pynq", "small": SMALL}
CHUNK = 25
# 8 chunks x 25 seeds on pynq + 4 x 25 on the small config = 300 programs
CASES = [("pynq", c) for c in range(8)] + [("small", c) for c in range(4)]
PYNQ = load_config("pynq")


def compare(config, program) -> str | None:
    expected, actual = program.fresh_dram(), program.fresh_dram()
    reference_run(config, expected, program.insn_addr, program.insn_count)
    Simulator(config).run(actual, program.insn_addr, program.insn_count)
    return describe_mismatch(program, expected, actual)


@pytest.mark.parametrize("name,chunk", CASES)
def test_simulator_matches_reference_on_random_programs(name, chunk):
    config = load_config(CONFIGS[name])
    failures = []
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        program = random_program(config, seed)
        problem = compare(config, program)
        if problem:
            failures.append(problem)
    assert not failures, "\n".join(failures[:5])


def test_programs_cover_the_isa():
    """Over 60 seeds the generator emits every opcode, memory type, ALU op and flag it should."""
    seen = set()
    for seed in range(60):
        program = random_program(PYNQ, seed)
        for insn in program.insns:
            for flag in ("pop_prev", "pop_next", "push_prev", "push_next"):
                if getattr(insn, flag):
                    seen.add((insn.module().name, flag))
            if isinstance(insn, MemInsn):
                kind = (Opcode(insn.opcode).name, insn.memory_type.name)
                seen.add(kind + (("nop",) if insn.x_size == 0 else ()))
                for pad in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
                    if getattr(insn, pad):
                        seen.add((insn.memory_type.name, pad))
                if insn.x_size and insn.y_size > 1 and insn.x_stride != insn.x_size:
                    seen.add((Opcode(insn.opcode).name, "strided"))
            elif isinstance(insn, GemmInsn):
                kind = "DEPTHWISE" if isinstance(insn, DepthwiseInsn) else "GEMM"
                seen.add((kind, "reset" if insn.reset else "mac"))
                if kind == "DEPTHWISE" and insn.uop_end - insn.uop_begin >= DEPTHWISE_TAPS + 1:
                    seen.add((kind, "window slides"))
                if insn.iter_out > 1 and insn.iter_in > 1 and insn.uop_end - insn.uop_begin > 1:
                    seen.add(("GEMM", "nested loops"))
            elif isinstance(insn, AluInsn) and not insn.reset:
                seen.add(("ALU", insn.alu_opcode.name, "imm" if insn.use_imm else "tensor"))
                if insn.alu_opcode == AluOp.SHR and insn.use_imm and insn.imm < 0:
                    seen.add(("ALU", "SHR", "negative imm"))
            elif isinstance(insn, AluInsn):
                seen.add(("ALU", "reset"))
    want = {("LOAD", t) for t in ("UOP", "INP", "WGT", "ACC", "ACC_8BIT")} | {("STORE", "OUT")}
    want |= {("LOAD", "INP", "nop"), ("STORE", "OUT", "nop"), ("LOAD", "UOP", "nop"), ("LOAD", "strided"),
             ("STORE", "strided")}
    want |= {(t, p) for t in ("INP", "WGT", "ACC", "ACC_8BIT") for p in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")}
    want |= {("GEMM", "reset"), ("GEMM", "mac"), ("GEMM", "nested loops"), ("ALU", "reset"),
             ("DEPTHWISE", "mac"), ("DEPTHWISE", "reset"), ("DEPTHWISE", "window slides"),
             ("ALU", "SHR", "negative imm")}
    want |= {("ALU", op.name, kind) for op in AluOp for kind in ("imm", "tensor")}
    want |= {("LOAD", "pop_next"), ("LOAD", "push_next"), ("STORE", "pop_prev"), ("STORE", "push_prev")}
    want |= {("COMPUTE", f) for f in ("pop_prev", "pop_next", "push_prev", "push_next")}
    assert want <= seen, f"never generated: {sorted(want - seen)}"


def test_programs_are_well_formed_and_store_computed_data():
    stored = nonzero = 0
    for seed in range(20):
        program = random_program(PYNQ, seed, min_insns=20, max_insns=200)
        assert 20 <= program.insn_count <= 260  # the epilogue adds a few to the body's length
        assert isinstance(program.insns[-1], FinishInsn)
        assert sum(isinstance(i, FinishInsn) for i in program.insns) == 1
        # the stream in DRAM decodes back to the instructions the generator describes
        raw = program.dram[program.insn_addr:program.insn_addr + INSN_BYTES * program.insn_count]
        assert load_config("pynq").isa.decode_stream(raw) == program.insns
        dram = reference_run(PYNQ, program.fresh_dram(), program.insn_addr, program.insn_count)
        before = program.dram
        changed = np.flatnonzero(dram != before)
        lo, n = program.regions["output"]
        assert changed.size == 0 or (changed.min() >= lo and changed.max() < lo + n)  # stores stay in the output area
        for addr, count in program.outputs:
            stored += count
            nonzero += np.count_nonzero(dram[addr:addr + count])
    # the outputs carry data computed from the inputs, not only zeros of untouched SRAM
    assert nonzero > stored // 5


def test_same_seed_same_program_different_seed_different_program():
    a, b, c = (random_program(PYNQ, s) for s in (7, 7, 8))
    assert np.array_equal(a.dram, b.dram) and a.insns == b.insns
    assert not np.array_equal(a.dram[a.insn_addr:], c.dram[c.insn_addr:])


@pytest.mark.parametrize("timing", [dict(cmd_queue_depth=1, fetch_burst_insns=1),
                                    dict(cmd_queue_depth=2, dram_read_latency=200, token_delay=7)])
def test_token_patterns_never_deadlock_even_with_tiny_queues(timing):
    """Every pop's matching push precedes it in the stream, so the shallowest command queues finish."""
    config = load_config({**load_config("pynq").to_dict(), "timing": timing})
    for seed in range(15):
        program = random_program(config, seed)
        Simulator(config).run(program.fresh_dram(), program.insn_addr, program.insn_count)


def _shr_negative_as_zero(op, a, b):
    if op == AluOp.SHR and shift_amount(b) < 0:
        return a
    return original_alu_op(op, a, b)


original_alu_op = reference._alu_op


@pytest.mark.parametrize("bug", ["shr_negative", "acc8_unsigned", "x_pads_swapped"])
def test_comparison_catches_a_seeded_reference_bug(monkeypatch, bug):
    """A wrong semantic in the reference must show up as a mismatch in the first few dozen programs."""
    if bug == "shr_negative":
        monkeypatch.setattr(reference, "_alu_op", _shr_negative_as_zero)
    elif bug == "acc8_unsigned":
        decode = reference.ReferenceMachine._decode_elem
        monkeypatch.setattr(reference.ReferenceMachine, "_decode_elem", staticmethod(
            lambda mt, raw: raw.astype(np.int64) if mt == MemType.ACC_8BIT else decode(mt, raw)))
    else:
        load = reference.ReferenceMachine.load

        def swapped(self, insn, index):
            return load(self, insn.replace(x_pad_0=insn.x_pad_1, x_pad_1=insn.x_pad_0), index)
        monkeypatch.setattr(reference.ReferenceMachine, "load", swapped)
    problems = [compare(PYNQ, random_program(PYNQ, seed)) for seed in range(40)]
    caught = [p for p in problems if p]
    assert caught, f"seeded bug {bug} went unnoticed by 40 random programs"
    assert "first at byte 0x" in caught[0] and "written by instruction" in caught[0]


def test_programs_are_race_free_under_random_schedules():
    """Any interleaving the tokens allow gives the same DRAM: the generator's vector clocks work."""
    config = load_config("pynq")
    for seed in range(12):
        program = random_program(config, seed)
        insns = reference.decode_program(config, program.dram, program.insn_addr, program.insn_count)
        results = []
        for schedule in (None, 1, 2, 3):
            dram = program.fresh_dram()
            reference.run_insns(config, insns, dram, schedule_seed=schedule)
            results.append(dram)
        for other in results[1:]:
            assert describe_mismatch(program, results[0], other) is None


def test_random_schedules_expose_a_race():
    """Negative control for the test above: a GEMM that reads INP without waiting for its load."""
    config = load_config("pynq")
    program = random_program(config, 0)  # borrow a DRAM image; replace the stream
    from vdla.hw.isa import Uop
    isa = config.isa
    dram = program.fresh_dram()
    uop_at = program.regions["uops"][0]
    dram[uop_at:uop_at + 4] = isa.encode_uops([Uop(0, 0, 0)]).view(np.uint8)
    out_at = program.regions["output"][0]
    insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemType.WGT, sram_base=0, dram_base=1, y_size=1, x_size=1,
                     x_stride=1),
             MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, sram_base=0, dram_base=3, y_size=1, x_size=1,
                     x_stride=1, push_next=True),
             MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=0, dram_base=uop_at // 4, y_size=1,
                     x_size=1, x_stride=1),
             GemmInsn(uop_begin=0, uop_end=1, push_next=True),  # races with the loads above
             MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=0, dram_base=out_at // 16, y_size=1,
                     x_size=1, x_stride=1, pop_prev=True, push_prev=True),
             FinishInsn(pop_prev=True, pop_next=True)]
    outcomes = set()
    for schedule in range(12):
        d = dram.copy()
        reference.run_insns(config, insns, d, schedule_seed=schedule)
        outcomes.add(d[out_at:out_at + 16].tobytes())
    assert len(outcomes) > 1


def test_below_the_api_edges_a_config_object_is_required():
    """A preset name or None is not read as pynq here: the edges (vdla.hw.config) build the HwConfig."""
    program = random_program(PYNQ, 0)
    calls = [lambda c: random_program(c, 0), lambda c: Simulator(c),
             lambda c: reference_run(c, program.fresh_dram(), program.insn_addr, program.insn_count),
             lambda c: reference.decode_program(c, program.dram, program.insn_addr, program.insn_count)]
    for call in calls:
        for wrong in ("pynq", None):
            with pytest.raises(TypeError, match="^config must be an HwConfig"):
                call(wrong)
