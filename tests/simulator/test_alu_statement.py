"""The simulator's ALU computes vdla.hw's statement of the lane operations (vdla.hw.alu_ops):
random instructions of every opcode through each of the simulator's engines (immediate,
tensor operands the nest never writes, operands it writes earlier, loops that repeat) against
a step-by-step loop over the nest that applies vdla.hw's `lane_op`. The statement itself is
checked against the independent reference model in tests/hw_unit/test_alu_ops.py."""
import numpy as np
import pytest

from vdla.hw import AluInsn, AluOp, load_config
from vdla.hw.alu_ops import CLEARING_OPS, LANE_OPS, IMM_MAX, IMM_MIN, LANE_MAX, LANE_MIN, SHR_MAX, SHR_MIN, lane_op
from vdla.simulator.semantics import execute
from vdla.simulator.state import OnChipState

# 4 lanes, 16 accumulator entries; forwarding (no hazard distance) makes every order legal
TINY = load_config({"LOG_BLOCK": 2, "LOG_ACC_BUFF_SIZE": 8, "LOG_INP_BUFF_SIZE": 8, "LOG_WGT_BUFF_SIZE": 8,
                    "LOG_UOP_BUFF_SIZE": 8, "timing": {"acc_raw_min_distance": 0}})
DEPTH = TINY.acc_depth
HALF = DEPTH // 2
LAYOUTS = ("immediate", "sources_never_written", "sources_written_earlier", "repeated_loop")


def lanes(rng, shape) -> np.ndarray:
    """int32 values over the whole range, with the extremes and small numbers mixed in."""
    values = rng.integers(LANE_MIN, LANE_MAX + 1, shape, dtype=np.int64)
    special = rng.choice([LANE_MIN, LANE_MAX, -1, 0, 1, -33, 31], shape)
    return np.where(rng.random(shape) < 0.2, special, values).astype(np.int32)


def immediate(rng, op: AluOp) -> int:
    if op == AluOp.SHR and rng.random() < 0.7:
        return int(rng.integers(SHR_MIN, SHR_MAX + 1))
    return int(rng.integers(IMM_MIN, IMM_MAX + 1))   # SHR: amounts that alias, as the hardware reads them


def nest_fields(rng, layout: str) -> dict:
    f = dict(iter_out=int(rng.integers(1, 4)), iter_in=int(rng.integers(1, 4)))
    for name in ("dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in"):
        f[name] = int(rng.integers(0, 2))
    if layout == "repeated_loop":     # one long loop with all-zero factors: a pure repeat
        level = "out" if rng.random() < 0.5 else "in"
        f[f"iter_{level}"] = int(rng.integers(20, 60))
        f[f"dst_factor_{level}"] = f[f"src_factor_{level}"] = 0
    return f


def random_case(rng, op: AluOp, layout: str):
    """(state, instruction) with every index of the nest inside its half of the accumulator."""
    while True:
        n = int(rng.integers(1, 6))
        f = nest_fields(rng, layout)
        reach = {k: (f["iter_out"] - 1) * f[f"{k}_factor_out"] + (f["iter_in"] - 1) * f[f"{k}_factor_in"]
                 for k in ("dst", "src")}
        if max(reach.values()) < HALF:
            break
    state = OnChipState(TINY)
    state.acc[:] = lanes(rng, state.acc.shape)
    state.lut[:] = rng.integers(-128, 128, state.lut.shape)
    if op == AluOp.LUT and rng.random() < 0.5:   # small values: lookups inside the table, not saturated
        state.acc[:] = rng.integers(-200, 200, state.acc.shape)
    if op == AluOp.MUL and rng.random() < 0.5:   # small odd values: products that do not vanish at once
        state.acc[:] = rng.integers(-3, 4, state.acc.shape) | 1
    dst = rng.integers(0, HALF - reach["dst"], n)
    if layout == "sources_never_written":
        src = rng.integers(HALF, DEPTH - reach["src"], n)
    else:
        src = rng.integers(0, HALF - reach["src"], n)
    state.uop_dst[:n], state.uop_src[:n] = dst, src
    use_imm = layout == "immediate"
    insn = AluInsn(uop_begin=0, uop_end=n, alu_opcode=op, use_imm=use_imm,
                   imm=immediate(rng, op) if use_imm else 0, **f)
    return state, insn


def step_by_step(insn: AluInsn, state: OnChipState) -> tuple[np.ndarray, np.ndarray]:
    """(ACC, OUT) after the nest in SPEC order, one micro-op step at a time, each step vdla.hw's
    lane_op written back to OUT's low bits, and to ACC unless the op clears it."""
    acc, out = state.acc.copy(), state.out.copy()
    for i in range(insn.iter_out):
        for j in range(insn.iter_in):
            for u in range(insn.uop_begin, insn.uop_end):
                d = state.uop_dst[u] + i * insn.dst_factor_out + j * insn.dst_factor_in
                s = state.uop_src[u] + i * insn.src_factor_out + j * insn.src_factor_in
                value = lane_op(insn.alu_opcode, acc[d], insn.imm if insn.use_imm else acc[s],
                                table=state.lut.reshape(-1))
                out[d] = value.astype(np.int8)
                acc[d] = 0 if insn.alu_opcode in CLEARING_OPS else value
    return acc, out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", LANE_OPS, ids=[op.name for op in LANE_OPS])
def test_simulator_alu_is_the_vdla_hw_lane_operation(op, layout):
    rng = np.random.default_rng([int(op), LAYOUTS.index(layout)])
    for _ in range(25):
        state, insn = random_case(rng, op, layout)
        acc, out = step_by_step(insn, state)
        execute(insn, 0, state, None)
        np.testing.assert_array_equal(state.acc, acc, err_msg=str(insn))
        np.testing.assert_array_equal(state.out, out, err_msg=str(insn))
