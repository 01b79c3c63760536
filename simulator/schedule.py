"""When each instruction runs: the timing model of vdla_hw/timing.py as a dataflow of times.

Tokens carry no data and each queue has one producer, so the n-th pop of a queue consumes
its n-th push; a command-queue slot frees when the module starts the instruction that sat
`cmd_queue_depth` places earlier. Every time is therefore a max() over times computed
before it, and the schedule is found by letting each actor (fetch and the three modules)
advance as far as its inputs are known, until everything is placed or nothing can move
(a deadlock, reported with what each stuck module waits for).

With a cycle budget the walk stops as soon as FINISH provably ends past it: FINISH is the
last instruction fetch dispatches and the last compute runs, so a dispatch or a compute
instruction that is already too late decides the timeout long before the rest is placed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vdla.hw.isa import FLAG_QUEUE, TOKEN_QUEUES, FinishInsn, Module
from vdla.hw.timing import duration

from .errors import CycleBudgetExceeded, DeadlockError, StreamError, TokenError


@dataclass
class Schedule:
    start: np.ndarray            # per instruction, cycle it starts
    end: np.ndarray              # per instruction, cycle it ends
    dispatch: np.ndarray         # per instruction, cycle fetch put it into its command queue
    module: np.ndarray           # per instruction, Module value
    finish_index: int
    cycles: int                  # end of FINISH: the cycle counter's value
    token_stall: np.ndarray      # per instruction, cycles spent waiting for tokens
    cmd_stall: np.ndarray        # per instruction, cycles spent waiting for the instruction itself
    token_counts: dict = field(default_factory=dict)


def _validate_flags(insns) -> np.ndarray:
    modules = np.empty(len(insns), dtype=np.int8)
    finish = None
    for i, insn in enumerate(insns):
        m = insn.module()
        modules[i] = m
        table = FLAG_QUEUE[m]
        for flag, queue in table.items():
            if queue is None and getattr(insn, flag):
                raise TokenError(f"{type(insn).__name__} runs on the {m.name.lower()} module, "
                                 f"which has no {flag} queue; the flag must be 0", i)
        if isinstance(insn, FinishInsn) and finish is None:
            finish = i
    if finish is None:
        raise StreamError(f"the stream has no FINISH instruction (the last one is {type(insns[-1]).__name__}), "
                          "so the accelerator would never signal done; end every stream with FINISH",
                          len(insns) - 1)
    if finish != len(insns) - 1:
        raise StreamError(f"instruction {finish + 1} follows FINISH (at {finish}); FINISH must be last", finish + 1)
    return modules


def schedule(insns, config, max_cycles: int | None = None) -> Schedule:
    """Place every instruction in time; CycleBudgetExceeded as soon as FINISH cannot end by
    cycle `max_cycles` (None: no budget)."""
    t = config.timing
    n = len(insns)
    modules = _validate_flags(insns)
    dur = [duration(insn, config) for insn in insns]
    tables = [FLAG_QUEUE[m] for m in Module]
    pops = [[tables[m][f] for f in ("pop_prev", "pop_next") if getattr(insn, f)]
            for m, insn in zip(modules.tolist(), insns)]
    pushes = [[tables[m][f] for f in ("push_prev", "push_next") if getattr(insn, f)]
              for m, insn in zip(modules.tolist(), insns)]

    queue_of = [np.flatnonzero(modules == m).tolist() for m in Module]
    pos_in_queue = [0] * n
    for q in queue_of:
        for p, i in enumerate(q):
            pos_in_queue[i] = p
    module_list = modules.tolist()

    # plain lists: this loop is the simulator's hot path and numpy scalars are slow here
    start, end, dispatch = [-1] * n, [-1] * n, [-1] * n
    token_stall, cmd_stall = [0] * n, [0] * n
    visible = {q: [] for q in TOKEN_QUEUES}   # visible time of each push, in push order
    popped = {q: 0 for q in TOKEN_QUEUES}
    next_pos = [0, 0, 0]
    prev_end = [0, 0, 0]

    # fetch state
    burst, fetched = t.fetch_burst_insns, 0
    insn_beats_per = config.insn_bytes
    request, arrival, last_dispatch = 0, None, -1

    while True:
        progress = False
        # ---- fetch: dispatch as far as command-queue slots are known to be free --------
        while fetched < n:
            if fetched % burst == 0 and arrival is None:
                count = min(burst, n - fetched)
                beats = -(-count * insn_beats_per // config.bus_bytes)
                arrival = request + t.dram_read_latency + beats
            i = fetched
            m = module_list[i]
            p = pos_in_queue[i]
            slot_free = 0
            if p >= t.cmd_queue_depth:
                earlier = queue_of[m][p - t.cmd_queue_depth]
                if start[earlier] < 0:
                    break  # queue full until that instruction starts
                slot_free = start[earlier] + 1
            d = max(last_dispatch + 1, arrival, slot_free)
            if max_cycles is not None and d + t.dispatch_delay + t.finish_cycles > max_cycles:
                raise _over_budget(insns[i], i, f"is dispatched at cycle {d}", max_cycles)
            dispatch[i] = last_dispatch = d
            fetched += 1
            progress = True
            if fetched % burst == 0 or fetched == n:
                request, arrival = d + 1, None
        # ---- modules --------------------------------------------------------------------
        for m in Module:
            q = queue_of[m]
            while next_pos[m] < len(q):
                i = q[next_pos[m]]
                if dispatch[i] < 0:
                    break
                ready = max(dispatch[i] + t.dispatch_delay, prev_end[m])
                s = ready
                blocked = False
                need = {}
                for queue in pops[i]:
                    need[queue] = need.get(queue, 0) + 1
                for queue, k in need.items():
                    if popped[queue] + k > len(visible[queue]):
                        blocked = True
                        break
                    s = max(s, visible[queue][popped[queue] + k - 1])
                if blocked:
                    break
                for queue, k in need.items():
                    popped[queue] += k
                start[i], end[i] = s, s + dur[i]
                if max_cycles is not None and m == Module.COMPUTE and \
                        end[i] + (0 if i == n - 1 else t.finish_cycles) > max_cycles:
                    raise _over_budget(insns[i], i, f"runs on compute until cycle {end[i]}", max_cycles)
                token_stall[i] = s - ready
                cmd_stall[i] = max(0, dispatch[i] + t.dispatch_delay - prev_end[m])
                prev_end[m] = end[i]
                for queue in pushes[i]:
                    visible[queue].append(end[i] + t.token_delay)
                next_pos[m] += 1
                progress = True
        if all(next_pos[m] == len(queue_of[m]) for m in Module):
            break
        if not progress:
            raise _deadlock(insns, queue_of, next_pos, dispatch, pops, popped, visible, fetched, n)

    start, end, dispatch = np.array(start), np.array(end), np.array(dispatch)
    token_stall, cmd_stall = np.array(token_stall), np.array(cmd_stall)
    finish = n - 1
    cycles = int(end[finish])
    for queue in TOKEN_QUEUES:
        pushed, used = len(visible[queue]), popped[queue]
        if pushed != used:
            raise TokenError(f"{pushed - used} token(s) left in queue {queue} at FINISH "
                             f"({pushed} pushed, {used} popped); every push needs a matching pop", finish)
        # occupancy never exceeds the queue depth: count pushes visible before each pop
        if pushed > t.token_queue_depth:
            pop_times = np.sort(_pop_times(queue, insns, modules, pops, start))
            push_times = np.asarray(visible[queue]) - t.token_delay
            occupancy = np.searchsorted(push_times, push_times, side="right") - \
                np.searchsorted(pop_times, push_times, side="right")
            if occupancy.max() > t.token_queue_depth:
                raise TokenError(f"queue {queue} holds {int(occupancy.max())} tokens at once, more than its "
                                 f"depth {t.token_queue_depth}")
    late = np.flatnonzero(end > cycles)
    if late.size:
        i = int(late[0])
        raise StreamError(f"{type(insns[i]).__name__} on the {Module(modules[i]).name.lower()} module is still "
                          f"running when FINISH completes (ends at cycle {int(end[i])} > {cycles}); make compute "
                          f"wait for it with a token before FINISH", i)
    return Schedule(start, end, dispatch, modules, finish, cycles, token_stall, cmd_stall,
                    {q: len(visible[q]) for q in TOKEN_QUEUES})


def _over_budget(insn, i: int, when: str, budget: int) -> CycleBudgetExceeded:
    return CycleBudgetExceeded(f"{type(insn).__name__} {when}, so FINISH cannot complete within the budget "
                               f"of {budget} cycles", i, budget)


def _pop_times(queue, insns, modules, pops, start):
    return [start[i] for i in range(len(insns)) for q in pops[i] if q == queue]


def _deadlock(insns, queue_of, next_pos, dispatch, pops, popped, visible, fetched, n) -> DeadlockError:
    stuck = []
    for m in Module:
        q = queue_of[m]
        if next_pos[m] >= len(q):
            continue
        i = q[next_pos[m]]
        if dispatch[i] < 0:
            waits = [f"fetch (stalled at instruction {fetched}: a full command queue)"]
        else:
            need = {}
            for queue in pops[i]:
                need[queue] = need.get(queue, 0) + 1
            waits = [f"token on {queue} ({len(visible[queue]) - popped[queue]} available, {k} needed)"
                     for queue, k in need.items() if popped[queue] + k > len(visible[queue])]
        stuck.append({"module": m.name.lower(), "insn": i, "waits_for": waits})
    lines = "; ".join(f"{s['module']} at instruction {s['insn']} waits for {', '.join(s['waits_for'])}"
                      for s in stuck)
    return DeadlockError(f"deadlock: {lines}", stuck)
