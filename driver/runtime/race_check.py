"""Race check of an instruction stream: are all SRAM conflicts between modules ordered by tokens?

The modules run concurrently, so a stream means what its sequential reading says only if
every pair of accesses to the same on-chip memory from different modules, at least one of
them a write, is ordered by the dependence tokens in stream order. A stream that breaks
this computes the right answer or not depending on timing (on the simulator today, on a
board with other DRAM latencies tomorrow). The check is timing-free: happens-before comes
from vector clocks carried along module program order and token edges (the n-th pop of a
queue is ordered after the n-th push).

Footprints are conservative boxes: a GEMM/ALU reads/writes from the smallest to the
largest index its micro-ops and loops can reach.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla.hw import AluInsn, AluOp, GemmInsn, MemInsn, MemType, Module, Opcode, format_insn

from .errors import DependenceError


@dataclass(frozen=True)
class Race:
    first: int        # stream index of the earlier instruction
    second: int       # stream index of the later one, not ordered after `first`
    memory: str
    lo: int
    hi: int

    def describe(self, insns) -> str:
        return (f"instructions {self.first} ({format_insn(insns[self.first])}) and {self.second} "
                f"({format_insn(insns[self.second])}) both touch {self.memory} SRAM [{self.lo}, {self.hi}) "
                "from different modules, at least one writing, and no token orders them")


def happens_before_clocks(insns) -> np.ndarray:
    """(n, 3) vector clocks: a happens before b iff clock[b][module(a)] >= clock[a][module(a)]."""
    n = len(insns)
    modules = [insn.module() for insn in insns]
    queues = {m: [i for i in range(n) if modules[i] == m] for m in Module}
    head = {m: 0 for m in Module}
    pushed: dict[str, list[np.ndarray]] = {}
    popped: dict[str, int] = {}
    clocks = np.zeros((n, 3), dtype=np.int64)
    last = {m: np.zeros(3, dtype=np.int64) for m in Module}
    progress = True
    while progress:
        progress = False
        for m in Module:
            while head[m] < len(queues[m]):
                i = queues[m][head[m]]
                pops = insns[i].pops()
                if any(popped.get(q, 0) >= len(pushed.get(q, ())) for q in pops):
                    break
                clock = last[m].copy()
                for q in pops:
                    clock = np.maximum(clock, pushed[q][popped.get(q, 0)])
                    popped[q] = popped.get(q, 0) + 1
                clock[m] += 1
                clocks[i] = last[m] = clock
                for q in insns[i].pushes():
                    pushed.setdefault(q, []).append(clock)
                head[m] += 1
                progress = True
    stuck = [f"{m.name.lower()} at instruction {queues[m][head[m]]}" for m in Module
             if head[m] < len(queues[m])]
    if stuck:
        raise DependenceError(f"the stream deadlocks: {', '.join(stuck)} wait for tokens never pushed")
    return clocks


def _box(base_values: np.ndarray, insn, name: str) -> tuple[int, int]:
    steps = [(insn.iter_out - 1) * getattr(insn, f"{name}_factor_out"),
             (insn.iter_in - 1) * getattr(insn, f"{name}_factor_in")]
    return int(base_values.min()), int(base_values.max()) + sum(steps) + 1


def footprints(insns, uop_fields) -> list[tuple[int, str, int, int, bool]]:
    """(insn index, memory, lo, hi, writes) for every SRAM access; `uop_fields(dram_base,
    count)` returns the (dst, src, wgt) arrays of micro-ops that a LOAD UOP reads."""
    uops = {}   # uop SRAM index -> (dst, src, wgt) as loaded by compute's program order
    out = []
    for i, insn in enumerate(insns):
        if isinstance(insn, MemInsn) and insn.x_size:
            mt = insn.memory_type
            if insn.opcode == Opcode.STORE:
                out.append((i, "out", insn.sram_base, insn.sram_base + insn.x_size * insn.y_size, False))
            elif mt == MemType.UOP:
                dst, src, wgt = uop_fields(insn.dram_base, insn.x_size)
                for k in range(insn.x_size):
                    uops[insn.sram_base + k] = (dst[k], src[k], wgt[k])
            else:
                size = ((insn.y_pad_0 + insn.y_size + insn.y_pad_1)
                        * (insn.x_pad_0 + insn.x_size + insn.x_pad_1))
                memory = {MemType.INP: "inp", MemType.WGT: "wgt", MemType.LUT: "lut"}.get(mt, "acc")
                out.append((i, memory, insn.sram_base, insn.sram_base + size, True))
        elif isinstance(insn, (GemmInsn, AluInsn)) and insn.uop_end > insn.uop_begin:
            fields = np.array([uops.get(k, (0, 0, 0)) for k in range(insn.uop_begin, insn.uop_end)],
                              dtype=np.int64)
            if isinstance(insn, AluInsn) and insn.alu_opcode == AluOp.SETQ:
                # writes the requantizer's registers (compute's own, in order): reads its source only
                if not insn.use_imm:
                    out.append((i, "acc", *_box(fields[:, 1], insn, "src"), False))
                continue
            dst = _box(fields[:, 0], insn, "dst")
            out += [(i, "acc", *dst, True), (i, "out", *dst, True)]
            if isinstance(insn, GemmInsn) and insn.reset:
                continue   # a GEMM reset reads nothing; ALU ignores the reset bit (SPEC, vdla.hw.isa)
            if isinstance(insn, GemmInsn):
                out += [(i, "inp", *_box(fields[:, 1], insn, "src"), False),
                        (i, "wgt", *_box(fields[:, 2], insn, "wgt"), False)]
            elif not insn.use_imm:
                out.append((i, "acc", *_box(fields[:, 1], insn, "src"), False))
    return out


def find_races(insns, uop_fields, limit: int = 10) -> list[Race]:
    clocks = happens_before_clocks(insns)
    modules = np.array([int(insn.module()) for insn in insns])
    races = []
    access = footprints(insns, uop_fields)
    for memory in ("inp", "wgt", "acc", "out"):
        rows = [a for a in access if a[1] == memory]
        if not rows:
            continue
        idx = np.array([a[0] for a in rows])
        lo = np.array([a[2] for a in rows])
        hi = np.array([a[3] for a in rows])
        writes = np.array([a[4] for a in rows])
        mod = modules[idx]
        for k in range(len(rows)):
            i = idx[k]
            later = (idx > i) & (mod != mod[k]) & (lo < hi[k]) & (lo[k] < hi) & (writes | writes[k])
            if not later.any():
                continue
            j = idx[later]
            unordered = clocks[j, mod[k]] < clocks[i, mod[k]]
            for jj, l, h in zip(j[unordered], lo[later][unordered], hi[later][unordered]):
                races.append(Race(int(i), int(jj), memory, max(int(lo[k]), int(l)), min(int(hi[k]), int(h))))
                if len(races) >= limit:
                    return races
    return races
