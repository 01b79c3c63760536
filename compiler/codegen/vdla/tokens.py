"""insert_dependence_tokens: the push/pop pairs that make a sequential instruction list
mean the same when load, compute and store run concurrently (VTA's coprocessor sync).

For each instruction B of stage Y and each neighbouring stage X, the last earlier
instruction A of X that conflicts with B (A writes what B reads or writes, or A reads what
B writes; same SRAM, overlapping ranges) must finish before B starts: A pushes X->Y and B
pops it. A pop already covers every X instruction up to the one that pushed its token, so
a new pair is added only when A lies beyond the last covered one; pushes and pops of a
queue then pair up in order, and every pop waits on an instruction earlier in program
order (no deadlock, no token left over)."""
from __future__ import annotations

from vdla.driver.runtime import Stage
from vdla.driver.runtime.program_calls import Pop, Push

_NEIGHBOURS = {Stage.LOAD: (Stage.COMPUTE,), Stage.COMPUTE: (Stage.LOAD, Stage.STORE),
               Stage.STORE: (Stage.COMPUTE,)}


def _overlap(xs, ys) -> bool:
    for m, lo, hi in xs:
        for m2, lo2, hi2 in ys:
            if m == m2 and lo < hi2 and lo2 < hi:
                return True
    return False


def conflict(a, b) -> bool:
    """Must b wait for a (or the other way round)? One writes what the other reads or writes."""
    return _overlap(a.writes, b.reads) or _overlap(a.writes, b.writes) or _overlap(a.reads, b.writes)


def insert_dependence_tokens(ops) -> list:
    """The calls of `ops` in order, with Pop records before and Push records after the
    operations that must wait or be waited for."""
    by_stage = {s: [] for s in Stage}           # stage -> [op index]
    covered = {}                                # (X, Y) -> position in by_stage[X] covered by a pop
    pops = [[] for _ in ops]
    pushes = [[] for _ in ops]
    for i, b in enumerate(ops):
        for x in _NEIGHBOURS[b.stage]:
            done = covered.get((x, b.stage), -1)
            hist = by_stage[x]
            for pos in range(len(hist) - 1, done, -1):
                if conflict(ops[hist[pos]], b):
                    pushes[hist[pos]].append((x, b.stage))
                    pops[i].append((x, b.stage))
                    covered[(x, b.stage)] = pos
                    break
        by_stage[b.stage].append(i)
    calls = []
    for i, op in enumerate(ops):
        calls += [Pop(int(x), int(y)) for x, y in pops[i]]
        calls.append(op.call)
        calls += [Push(int(x), int(y)) for x, y in pushes[i]]
    return calls
