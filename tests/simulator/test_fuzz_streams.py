"""Fuzzing the simulator with instruction streams: random bytes, and random instructions
drawn toward the ISA's extremes (loop counts up to 16383, every micro-op, top-of-SRAM and
top-of-DRAM addresses, 65535-element DMAs, full padding) over random micro-op tables.

Every case must end -- normally, or with the simulator's own error class naming the
instruction (a deadlock names every stuck one) -- within a generous per-case bound; never
with MemoryError, ValueError, IndexError or any other bare exception. A third of the cases
run under a cycle budget, as a driver's launch does."""
import time

import numpy as np
import pytest

from vdla.hw import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, Uop, load_config
from vdla.hw.alu_ops import IMM_MAX, IMM_MIN
from vdla.simulator import DeadlockError, Simulator, SimulatorError

CFG = load_config("pynq")
DRAM_BYTES = 4 << 20
INSN_ADDR = 3 << 20
UOP_ADDR = 2 << 20
CASE_BOUND_S = 20     # "must not hang": a case takes milliseconds to about a second


def pick(rng, *choices):
    return choices[int(rng.integers(len(choices)))]


def extreme(rng, top: int) -> int:
    """0, 1, 2, a random value or the field's maximum."""
    return int(pick(rng, 0, 1, 2, int(rng.integers(0, top + 1)), top, top - 1))


def flags(rng, random_flags: bool = True) -> dict:
    return {f: random_flags and bool(rng.random() < 0.15) for f in ("pop_prev", "pop_next", "push_prev", "push_next")}


def loop_fields(rng, gemm: bool) -> dict:
    n = CFG.uop_depth
    if rng.random() < 0.7:   # a range of the patterned table: long loops can be legal
        begin = int(pick(rng, 0, 0, int(rng.integers(0, n - 600))))
        end = begin + int(pick(rng, 1, 2, 3, 8, 64, 512, n - begin))
    else:
        begin = int(pick(rng, 0, int(rng.integers(0, n)), n - 1))
        end = int(pick(rng, begin, n, n + 1, int(rng.integers(0, 2 * n))))
    f = dict(uop_begin=begin, uop_end=min(end, 2 * n - 1), reset=bool(rng.random() < 0.3),
             iter_out=extreme(rng, 16383), iter_in=extreme(rng, 16383))
    names = ["dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in"]
    names += ["wgt_factor_out", "wgt_factor_in"] if gemm else []
    layout = {fl.name: fl for fl in (CFG.isa.gemm if gemm else CFG.isa.alu)}
    for name in names:   # mostly zero or small, sometimes the field's maximum
        f[name] = int(pick(rng, 0, 0, 0, 0, 0, 1, int(rng.integers(0, 4)), layout[name].mask))
    return f


def random_insn(rng, with_flags: bool):
    kind = rng.random()
    if kind < 0.5:
        gemm = rng.random() < 0.5
        f = loop_fields(rng, gemm)
        if gemm:
            return GemmInsn(**f, **flags(rng, with_flags))
        return AluInsn(**f, alu_opcode=AluOp(int(rng.integers(0, 5))), use_imm=bool(rng.random() < 0.5),
                       imm=int(rng.integers(IMM_MIN, IMM_MAX + 1)), **flags(rng, with_flags))
    store = kind < 0.65
    mt = MemType.OUT if store and rng.random() < 0.9 else MemType(int(rng.integers(0, 6)))
    if not store and mt == MemType.OUT and rng.random() < 0.8:
        mt = MemType.ACC
    depth = {MemType.INP: CFG.inp_depth, MemType.WGT: CFG.wgt_depth, MemType.UOP: CFG.uop_depth}.get(mt, CFG.acc_depth)
    pads = [int(pick(rng, 0, 0, 1, 15)) for _ in range(4)]
    if rng.random() < 0.7:   # fits its SRAM and DRAM, at the edges now and then
        rows, cols = int(rng.integers(1, 9)), int(rng.integers(1, 17))
        total = (rows + pads[0] + pads[1]) * (cols + pads[2] + pads[3])
        sram = int(pick(rng, 0, max(depth - total, 0), int(rng.integers(0, max(depth - total, 0) + 1))))
        fields = dict(sram_base=sram, dram_base=int(rng.integers(0, 4096)), y_size=rows, x_size=cols,
                      x_stride=cols + int(pick(rng, 0, 1, 100)))
    else:
        fields = dict(sram_base=int(pick(rng, 0, int(rng.integers(0, depth)), depth - 1, 65535)),
                      dram_base=int(pick(rng, 0, int(rng.integers(0, DRAM_BYTES // 256)), 2**32 - 1)),
                      y_size=extreme(rng, 65535), x_size=extreme(rng, 65535), x_stride=extreme(rng, 65535))
    return MemInsn(opcode=Opcode.STORE if store else Opcode.LOAD, memory_type=mt, y_pad_0=pads[0],
                   y_pad_1=pads[1], x_pad_0=pads[2], x_pad_1=pads[3], pad_min=bool(rng.random() < 0.2),
                   **fields, **flags(rng, with_flags))


def uop_table(rng) -> np.ndarray:
    """Micro-ops that are random, or patterned so that long loops stay in range and legal."""
    n = CFG.uop_depth
    if rng.random() < 0.3:
        return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    k = np.arange(n)
    m = int(pick(rng, 2, 3, 7, 64, 512))
    src = (k % m + int(pick(rng, 0, 1, m, 1024))) % 1024 if rng.random() < 0.5 else (k * 7 + 3) % 1024
    wgt = k % int(pick(rng, 1, 4, 1024))
    return CFG.isa.encode_uops([Uop(int(d), int(s), int(w)) for d, s, w in zip(k % m, src, wgt)])


def wired(insns: list) -> list:
    """The same instructions with the token handshakes that let each one run and finish:
    loads hand a token to a compute NOP, stores wait for compute and hand one back."""
    nop = lambda **kw: MemInsn(memory_type=MemType.UOP, x_size=0, **kw)  # noqa: E731
    out = []
    for insn in insns:
        module = insn.module().name
        if module == "LOAD":
            out += [insn.replace(push_next=True), nop(pop_prev=True)]
        elif module == "STORE":
            out += [nop(push_next=True), insn.replace(pop_prev=True, push_prev=True), nop(pop_next=True)]
        else:
            out.append(insn)
    return out + [FinishInsn()]


def fuzz_stream(rng) -> tuple[np.ndarray, int]:
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    uops = uop_table(rng)
    dram[UOP_ADDR:UOP_ADDR + uops.nbytes] = uops.view(np.uint8)
    style = rng.random()
    if style < 0.15:    # raw random bytes
        return dram, int(rng.integers(1, 40))
    body = [MemInsn(memory_type=MemType.UOP, sram_base=0, dram_base=UOP_ADDR // 4, y_size=1,
                    x_size=CFG.uop_depth, x_stride=CFG.uop_depth)]
    body += [random_insn(rng, with_flags=style < 0.3) for _ in range(int(rng.integers(1, 8)))]
    insns = body + [FinishInsn(**flags(rng))] if style < 0.3 else wired(body)
    stream = CFG.isa.encode_stream(insns)
    dram[INSN_ADDR:INSN_ADDR + stream.size] = stream
    return dram, len(insns)


@pytest.mark.parametrize("group", range(4))
def test_every_stream_ends_normally_or_with_the_simulators_error(group):
    rng = np.random.default_rng(1000 + group)
    outcomes = {}
    for case in range(60):
        dram, count = fuzz_stream(rng)
        budget = int(pick(rng, 10, 1000, 10**6, 2**31)) if rng.random() < 0.3 else None
        begin = time.perf_counter()
        try:
            result = Simulator(CFG).run(dram, INSN_ADDR, count, max_cycles=budget)
            assert budget is None or result.cycles <= budget
            outcome = "ok"
        except SimulatorError as exc:
            outcome = type(exc).__name__
            if isinstance(exc, DeadlockError):
                assert exc.stuck and all("insn" in s for s in exc.stuck)
            else:
                assert exc.insn_index is not None and 0 <= exc.insn_index < count, (case, exc)
                assert str(exc).startswith(f"instruction {exc.insn_index}: ")
        elapsed = time.perf_counter() - begin
        assert elapsed < CASE_BOUND_S, f"group {group} case {case} took {elapsed:.1f} s"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert len(outcomes) >= 3, outcomes   # the fuzz reaches several outcomes, not one wall
