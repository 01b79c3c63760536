"""ALU (SPEC §3): ACC[dst] = op(ACC[dst], imm or ACC[src]) at every step of the loop nest.

Three engines, all exact, chosen by what the instruction can observe of its own order:

* immediate: every update of an entry is the same function, so only how often each entry
  is updated matters -- counted in closed form, then one power per entry;
* tensor operand whose sources the instruction never writes: each entry's updates read
  constants, so they compose, in order, into one function per entry (alu_algebra); chunks
  of steps are reduced and loops that merely repeat become powers;
* sources that are also destinations: a later step may read an earlier one's result, so
  steps run in order (alu_in_order: stretches without such a dependence, one numpy update
  each; repeated bodies as matrix powers or pass by pass with cycle detection).

SETQ writes the requantizer's registers (vdla.hw.requantizer), not the accumulator: the last
step naming each register decides it.

FLUSH writes x + operand back to OUT and leaves the accumulator 0, so a step reads 0 from an
entry an earlier step of the same instruction flushed: steps run in order of first writes
(flush), a repeated loop twice at most (the third pass sees what the second saw).

LUT ignores its operand, so like an immediate only the count of updates per entry matters:
n lookups are one lookup in the table composed with itself n - 1 times (entries are int8,
so after the first lookup the saturation is the identity).

The reset bit is ignored: an ALU instruction always computes (VTA; see vdla.hw.isa).
"""
from __future__ import annotations

import numpy as np

from vdla.hw.alu_ops import table_index, wrap
from vdla.hw.isa import AluOp
from vdla.hw.requantizer import REGISTERS

from .alu_algebra import ALGEBRAS
from .errors import StreamError
from .alu_in_order import compose_by_key, repeat_in_order
from .loop_nest import LoopNest, check_hazard, check_range
from .work_limit import ALU_BODY, ALU_STEP

SMALL_BODY_STEPS = 1 << 16   # bodies checked one by one for reading their own writes


def execute_alu(insn, index: int, state) -> int:
    """Apply one ALU instruction; returns the micro-ops it executed."""
    cfg = state.config
    if insn.alu_opcode == AluOp.SETQ:
        return _set_requantizer(insn, index, state)
    nest = LoopNest.of(insn, state, index, ("dst",) if insn.use_imm else ("dst", "src"))
    check_range(nest, "dst", cfg.acc_depth, "ALU destination", index)
    if not insn.use_imm:
        check_range(nest, "src", cfg.acc_depth, "ALU source", index)
    check_hazard(nest, cfg.timing.acc_raw_min_distance, index, "ALU")
    if nest.steps == 0:
        return 0
    if insn.alu_opcode == AluOp.LUT and cfg.lut_depth == 0:
        raise StreamError(f"ALU LUT: config {cfg.name} has no lookup table (its {cfg.batch * cfg.block} lanes "
                          "are more than the table's entries)", index)
    if not state.compute:
        return nest.steps
    writes = nest.counts("dst", cfg.acc_depth)
    touched = np.flatnonzero(writes)
    if insn.alu_opcode == AluOp.LUT:
        _lookups(writes[touched], touched, state)
        state.write_back(insn, touched)
        return nest.steps
    if insn.alu_opcode == AluOp.FLUSH:
        _flush(insn, nest, touched, state)
        return nest.steps
    algebra = ALGEBRAS[insn.alu_opcode]
    if insn.use_imm:
        _immediate(algebra, insn.imm, writes[touched], touched, state)
    elif not nest.counts("src", cfg.acc_depth)[touched].any():
        _constant_operands(algebra, nest, touched, state)
    else:
        _in_order(algebra, nest, touched, state)
    state.write_back(insn, touched)
    return nest.steps


def _set_requantizer(insn, index: int, state) -> int:
    """SETQ: in step order, requantizer register d <- the operand (ACC[s], or the immediate in
    every lane); neither ACC nor OUT is written, so only the last step naming a register counts."""
    nest = LoopNest.of(insn, state, index, ("dst",) if insn.use_imm else ("dst", "src"))
    check_range(nest, "dst", len(REGISTERS), f"ALU SETQ register ({', '.join(REGISTERS)})", index)
    if not insn.use_imm:
        check_range(nest, "src", state.config.acc_depth, "ALU source", index)
    if nest.steps == 0:
        return 0
    folded, _, _ = nest.folded()      # a repeated loop repeats the same steps: the last ones
    state.meter.spend(folded.steps * ALU_STEP)
    last = {}
    for first, stop in folded.chunks(bytes_per_step=64):
        dst = folded.indices("dst", first, stop)
        src = dst if insn.use_imm else folded.indices("src", first, stop)
        for reg in np.unique(dst).tolist():
            last[reg] = int(src[np.flatnonzero(dst == reg)[-1]])
    for reg, src in last.items():
        state.requant[reg] = insn.imm if insn.use_imm else state.acc[src]
    return nest.steps


def _flush(insn, nest: LoopNest, touched: np.ndarray, state) -> None:
    """FLUSH in step order: each step writes back x + b, where x (and a tensor operand b) reads
    0 from an entry some earlier step flushed, else the accumulator as the instruction found it;
    the last step of an entry decides its OUT. Then the written entries hold 0."""
    folded, outer_reps, inner_reps = nest.folded()
    rows = folded.rows
    order = np.tile(np.repeat(np.arange(rows), min(inner_reps, 2)), min(outer_reps, 2))
    n = folded.uops
    state.meter.spend(order.size * n * ALU_STEP)
    depth = state.config.acc_depth
    flushed = np.zeros(depth, dtype=bool)
    value = np.zeros((depth, *state.acc.shape[1:]), dtype=np.int32)
    per_chunk = max(1, folded.rows_per_chunk(64 + int(np.prod(state.acc.shape[1:])) * 24))
    for a in range(0, order.size, per_chunk):
        steps = (order[a:a + per_chunk, None] * n + np.arange(n)).ravel()
        dst = folded.at("dst", steps)
        seen_at = np.full(depth, steps.size, dtype=np.int64)      # first step of this chunk that flushes
        first_dst, first_pos = np.unique(dst, return_index=True)
        seen_at[first_dst] = first_pos
        pos = np.arange(steps.size)

        def read(idx):
            gone = flushed[idx] | (seen_at[idx] < pos)
            return np.where(gone.reshape(-1, *([1] * (state.acc.ndim - 1))), 0, state.acc[idx].astype(np.int64))
        b = insn.imm if insn.use_imm else read(folded.at("src", steps))
        total = wrap(read(dst) + b)
        last_dst, last_rev = np.unique(dst[::-1], return_index=True)
        value[last_dst] = total[steps.size - 1 - last_rev]
        flushed[dst] = True
    state.write_back(insn, touched, value[touched])
    state.acc[touched] = 0


def _immediate(algebra, imm: int, writes: np.ndarray, touched: np.ndarray, state) -> None:
    lanes = state.acc.shape[1:]
    f = algebra.of_operand(np.full((touched.size, *lanes), imm, dtype=np.int64))
    state.acc[touched] = algebra.apply(algebra.power(f, writes), state.acc[touched])


def _lookups(writes: np.ndarray, touched: np.ndarray, state) -> None:
    """Entry d looked up writes[d] times: value n is table[step^(n-1)(index(x))], where step
    maps a table index to the index of its entry (square and multiply over n)."""
    table = state.lut.reshape(-1)
    step = table_index(table)
    index = table_index(state.acc[touched])          # (entries, batch, lanes)
    n = (writes - 1).reshape(-1, *([1] * (index.ndim - 1)))
    while n.any():
        index = np.where(n & 1, step[index], index)
        step, n = step[step], n >> 1
    state.acc[touched] = table[index]


def _constant_operands(algebra, nest: LoopNest, touched: np.ndarray, state) -> None:
    """Sources are never written here, so each step is a fixed function of its entry."""
    depth, lanes = state.config.acc_depth, state.acc.shape[1:]
    folded, outer_reps, inner_reps = nest.folded()
    state.meter.spend(folded.steps * ALU_STEP)
    slot = np.full(depth, -1, dtype=np.int64)
    slot[touched] = np.arange(touched.size)
    chain = algebra.identity((touched.size, *lanes))
    step_bytes = 64 + int(np.prod(lanes)) * 80
    if algebra.commutative:     # order within an entry does not matter: one block, one power
        blocks = [((0, folded.steps), outer_reps * inner_reps)]
    else:
        blocks = _blocks(folded, outer_reps, inner_reps)
    if len(blocks) > 1 and folded.rows_per_chunk(step_bytes):
        # many one-row blocks (SHR, inner loop repeats): key each step by (row, entry) so that
        # one pass over a chunk composes, powers and chains all of its rows
        for first, stop in folded.chunks(step_bytes):
            rows = np.arange(first, stop, dtype=np.int64) // folded.uops
            keys, composed = _compose_chunk(algebra, folded, first, stop, state, extra_key=rows * depth)
            keys, composed = compose_by_key(algebra, keys % depth, algebra.power(composed, inner_reps))
            chain[slot[keys]] = algebra.then(chain[slot[keys]], composed)
    else:
        for (first, stop), reps in blocks:
            state.meter.spend(ALU_BODY)
            block = algebra.identity((touched.size, *lanes))
            for a, b in folded.chunks(step_bytes, first, stop):
                keys, composed = _compose_chunk(algebra, folded, a, b, state)
                block[slot[keys]] = algebra.then(block[slot[keys]], composed)
            chain = algebra.then(chain, algebra.power(block, reps))
    state.acc[touched] = algebra.apply(chain, state.acc[touched])


def _compose_chunk(algebra, nest: LoopNest, first: int, stop: int, state, extra_key=0):
    dst = nest.indices("dst", first, stop)
    fs = algebra.of_operand(state.acc[nest.indices("src", first, stop)].astype(np.int64))
    return compose_by_key(algebra, dst + extra_key, fs)


def _blocks(folded: LoopNest, outer_reps: int, inner_reps: int) -> list:
    """The nest as ((first step, stop step), repeats) bodies, in order: a repeated outer loop
    repeats the whole folded nest; a repeated inner loop repeats each row on its own."""
    n = folded.uops
    if outer_reps > 1:
        return [((0, folded.steps), outer_reps * inner_reps)]
    if inner_reps > 1:
        return [((i * n, (i + 1) * n), inner_reps) for i in range(folded.iter_out)]
    return [((0, folded.steps), 1)]


def _in_order(algebra, nest: LoopNest, touched: np.ndarray, state) -> None:
    """Bodies in order; one whose sources it never writes itself (often most of the rows of
    a nest whose other rows do) still folds into one function per entry."""
    folded, outer_reps, inner_reps = nest.folded()
    step_bytes = 96 + int(np.prod(state.acc.shape[1:])) * 24
    for (first, stop), reps in _blocks(folded, outer_reps, inner_reps):
        state.meter.spend(ALU_BODY)
        if stop - first <= SMALL_BODY_STEPS:
            dst, src = folded.indices("dst", first, stop), folded.indices("src", first, stop)
            if not np.isin(src, dst).any():
                state.meter.spend((stop - first) * ALU_STEP)
                keys, composed = compose_by_key(algebra, dst, algebra.of_operand(state.acc[src].astype(np.int64)))
                state.acc[keys] = algebra.apply(algebra.power(composed, reps), state.acc[keys])
                continue
        repeat_in_order(algebra, folded, first, stop, reps, state.acc, step_bytes, state.meter)
