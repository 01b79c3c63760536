"""The GEMM and ALU engines (vectorised, chunked, repetition folded) against the reference
model's one-step-at-a-time interpreter, on nests whose indices overlap every way: a
destination repeated, a source that an earlier step wrote, the same entry as source and
destination, order-sensitive shifts. The forwarding config (acc_raw_min_distance 0) makes
any such order legal; a tiny accumulator makes overlaps the rule rather than the exception."""
import numpy as np
import pytest

from vdla.hw import AluInsn, AluOp, GemmInsn, load_config
from vdla.hw.alu_ops import LANE_OPS, IMM_MAX, IMM_MIN
from vdla.simulator.errors import HazardError, MemoryAccessError
from vdla.simulator.reference import ReferenceHazardError, ReferenceMachine, ReferenceMemoryError
from vdla.simulator.semantics import execute
from vdla.simulator.state import OnChipState

# 4 lanes, 16 accumulator entries, 16 input and 4 weight elements; every order legal
TINY = load_config({"LOG_BLOCK": 2, "LOG_ACC_BUFF_SIZE": 8, "LOG_INP_BUFF_SIZE": 8, "LOG_WGT_BUFF_SIZE": 8,
                    "LOG_UOP_BUFF_SIZE": 8, "timing": {"acc_raw_min_distance": 0}})
HAZARD = load_config({"LOG_BLOCK": 2, "LOG_ACC_BUFF_SIZE": 8, "LOG_INP_BUFF_SIZE": 8, "LOG_WGT_BUFF_SIZE": 8,
                      "LOG_UOP_BUFF_SIZE": 8, "timing": {"acc_raw_min_distance": 3}})


def machines(config, rng, n_uops: int, spread: int):
    state = OnChipState(config)
    ref = ReferenceMachine(config, np.zeros(16, dtype=np.uint8))
    acc = rng.integers(-2**31, 2**31, state.acc.shape, dtype=np.int64)
    if rng.random() < 0.5:   # small values: shift amounts of both signs, MUL that does not vanish
        acc = rng.integers(-40, 40, state.acc.shape)
    state.acc[:] = acc
    ref.acc[:] = acc
    state.inp[:] = ref.inp[:] = rng.integers(-128, 128, state.inp.shape)
    state.wgt[:] = ref.wgt[:] = rng.integers(-128, 128, state.wgt.shape)
    for u in range(n_uops):
        d, s, w = (int(rng.integers(0, spread)) for _ in range(3))
        state.uop_dst[u], state.uop_src[u], state.uop_wgt[u] = d, s, w % config.wgt_depth
        ref.uop[u] = (d, s, w % config.wgt_depth)
    return state, ref


def loop_fields(rng, big: bool) -> dict:
    """Small strides; with `big`, one loop runs long with all-zero factors (a pure repeat)."""
    f = dict(iter_out=int(rng.integers(1, 4)), iter_in=int(rng.integers(1, 4)))
    for name in ("dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in"):
        f[name] = int(rng.integers(0, 3)) if rng.random() < 0.5 else 0
    if big:
        level = "out" if rng.random() < 0.5 else "in"
        f[f"iter_{level}"] = int(rng.integers(20, 60))
        f[f"dst_factor_{level}"] = f[f"src_factor_{level}"] = 0
    return f


def outcome(run):
    try:
        run()
        return None
    except (MemoryAccessError, ReferenceMemoryError):
        return "range"
    except (HazardError, ReferenceHazardError):
        return "hazard"


def compare(config, state, ref, insn):
    """Both compute the same ACC and OUT, or both refuse the instruction. (When a nest is
    both out of range and too tight, the reference reports whichever its step-by-step walk
    meets first, the simulator checks ranges first: either is right.)"""
    got = outcome(lambda: execute(insn, 0, state, None))
    want = outcome(lambda: ref.alu(insn, 0) if isinstance(insn, AluInsn) else ref.gemm(insn, 0))
    assert (got is None) == (want is None), (insn, got, want)
    if got is None:
        np.testing.assert_array_equal(state.acc, ref.acc, err_msg=str(insn))
        np.testing.assert_array_equal(state.out, ref.out, err_msg=str(insn))
    return got


@pytest.mark.parametrize("op", LANE_OPS)
@pytest.mark.parametrize("use_imm", [False, True])
def test_alu_matches_the_reference_on_overlapping_indices(op, use_imm):
    rng = np.random.default_rng(int(op) * 2 + use_imm)
    results = []
    for case in range(60):
        n = int(rng.integers(1, 7))
        state, ref = machines(TINY, rng, n, spread=int(rng.choice([4, 10, 16])))
        imm = int(rng.integers(-40, 40)) if op == AluOp.SHR or rng.random() < 0.5 else \
            int(rng.integers(IMM_MIN, IMM_MAX + 1))
        insn = AluInsn(uop_begin=0, uop_end=n, alu_opcode=op, use_imm=use_imm, imm=imm,
                       reset=bool(rng.random() < 0.3), **loop_fields(rng, big=case % 3 == 0))
        results.append(compare(TINY, state, ref, insn))
    assert results.count(None) > 30   # most cases compute rather than stop at a range error


@pytest.mark.parametrize("reset", [False, True])
def test_gemm_matches_the_reference_with_repeats(reset):
    rng = np.random.default_rng(7 + reset)
    for case in range(40):
        n = int(rng.integers(1, 6))
        state, ref = machines(TINY, rng, n, spread=4)
        f = loop_fields(rng, big=case % 2 == 0)
        f.update(wgt_factor_out=0, wgt_factor_in=int(rng.integers(0, 2)) if f["dst_factor_in"] else 0)
        compare(TINY, state, ref, GemmInsn(reset=reset, uop_begin=0, uop_end=n, **f))


def test_hazards_agree_with_the_reference_under_a_distance_of_three():
    rng = np.random.default_rng(11)
    seen = set()
    for case in range(200):
        n = int(rng.integers(1, 6))
        state, ref = machines(HAZARD, rng, n, spread=12)
        insn = AluInsn(uop_begin=0, uop_end=n, alu_opcode=AluOp.ADD, use_imm=bool(case % 2),
                       **loop_fields(rng, big=False))
        seen.add(compare(HAZARD, state, ref, insn))
    assert seen == {None, "hazard", "range"}


def test_alu_reset_bit_is_ignored_the_instruction_computes():
    rng = np.random.default_rng(3)
    for use_imm in (False, True):
        state, ref = machines(TINY, rng, 2, spread=1)
        state.uop_dst[:2], state.uop_src[:2] = [0, 1], [2, 3]
        ref.uop[:2] = [(0, 2, 0), (1, 3, 0)]
        before = state.acc.copy()
        insn = AluInsn(reset=True, uop_begin=0, uop_end=2, alu_opcode=AluOp.ADD, use_imm=use_imm, imm=5)
        compare(TINY, state, ref, insn)
        expect = before[:2].astype(np.int64) + (5 if use_imm else before[2:4])
        np.testing.assert_array_equal(state.acc[:2], ((expect + 2**31) % 2**32 - 2**31).astype(np.int32))


@pytest.mark.parametrize("chunk_bytes", [1, 700, 48 << 20])
@pytest.mark.parametrize("repeat", ["outer", "inner", "both", "none"])
def test_order_sensitive_shifts_with_constant_sources_any_chunking(monkeypatch, chunk_bytes, repeat):
    """SHR composes in order per entry; sources (entries 8..15) are never written, so the
    engine composes and powers per entry -- across chunk seams that cut rows anywhere."""
    monkeypatch.setattr("vdla.simulator.loop_nest.CHUNK_BYTES", chunk_bytes)
    rng = np.random.default_rng(len(repeat) * 1000 + chunk_bytes % 997)
    for _ in range(6):
        n = int(rng.integers(2, 6))
        state, ref = machines(TINY, rng, n, spread=4)
        amounts = rng.integers(-6, 7, (8, *state.acc.shape[1:]))      # both signs, small
        state.acc[8:] = ref.acc[8:] = amounts
        for u in range(n):
            state.uop_src[u] = 8 + int(rng.integers(0, 2))
            ref.uop[u] = (int(state.uop_dst[u]), int(state.uop_src[u]), 0)
        f = dict(iter_out=3, iter_in=4, dst_factor_out=0, dst_factor_in=0, src_factor_out=1, src_factor_in=1)
        if repeat in ("outer", "both"):
            f.update(iter_out=9, src_factor_out=0)
        if repeat in ("inner", "both"):
            f.update(iter_in=9, src_factor_in=0)
        assert compare(TINY, state, ref, AluInsn(uop_begin=0, uop_end=n, alu_opcode=AluOp.SHR, **f)) is None


@pytest.mark.parametrize("chunk_bytes", [1, 900])
def test_engines_are_exact_across_chunk_seams(monkeypatch, chunk_bytes):
    monkeypatch.setattr("vdla.simulator.loop_nest.CHUNK_BYTES", chunk_bytes)
    rng = np.random.default_rng(chunk_bytes)
    for case in range(60):
        n = int(rng.integers(1, 6))
        state, ref = machines(TINY, rng, n, spread=int(rng.choice([4, 16])))
        f = loop_fields(rng, big=case % 4 == 0)
        if case % 3 == 0:
            insn = GemmInsn(uop_begin=0, uop_end=n, **f)
        else:
            insn = AluInsn(uop_begin=0, uop_end=n, alu_opcode=AluOp(case % 5), use_imm=case % 3 == 2,
                           imm=int(rng.integers(-9, 9)), **f)
        compare(TINY, state, ref, insn)
