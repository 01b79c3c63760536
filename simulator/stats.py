"""Statistics and traces of one simulated launch."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from vdla.hw.isa import AluInsn, GemmInsn, MemInsn, MemType, Module, Opcode
from vdla.hw.disasm import format_insn


@dataclass
class SimStats:
    cycles: int = 0
    insn_count: int = 0
    busy_cycles: dict = field(default_factory=dict)         # per module
    token_stall_cycles: dict = field(default_factory=dict)  # per module: waiting for a token
    fetch_stall_cycles: dict = field(default_factory=dict)  # per module: waiting for its next instruction
    load_bytes: dict = field(default_factory=dict)          # per memory type, padding excluded
    store_bytes: int = 0
    gemm_uops: int = 0                                      # reset micro-ops excluded
    alu_uops: int = 0
    gemm_utilization: float = 0.0                           # gemm_uops / cycles

    def to_dict(self) -> dict:
        return asdict(self)


def collect(insns, sched, config, gemm_uops: int, alu_uops: int) -> SimStats:
    from vdla.hw.timing import dma_bytes
    stats = SimStats(cycles=sched.cycles, insn_count=len(insns), gemm_uops=gemm_uops, alu_uops=alu_uops)
    for m in Module:
        name = m.name.lower()
        sel = sched.module == m
        stats.busy_cycles[name] = int((sched.end[sel] - sched.start[sel]).sum())
        stats.token_stall_cycles[name] = int(sched.token_stall[sel].sum())
        stats.fetch_stall_cycles[name] = int(sched.cmd_stall[sel].sum())
    loads = {mt.name: 0 for mt in MemType if mt != MemType.OUT}
    for insn in insns:
        if isinstance(insn, MemInsn) and insn.x_size:
            nbytes = dma_bytes(config, insn)
            if insn.opcode == Opcode.STORE:
                stats.store_bytes += nbytes
            else:
                loads[insn.memory_type.name] += nbytes
    stats.load_bytes = loads
    stats.gemm_utilization = gemm_uops / sched.cycles if sched.cycles else 0.0
    return stats


def insn_kind(insn) -> str:
    """What a timeline colours an instruction by: LOAD INP, LOAD WGT, LOAD UOP, LOAD ACC,
    LOAD ACC_8BIT, STORE, GEMM, ALU, FINISH, or NOP (a LOAD/STORE that only carries tokens)."""
    if isinstance(insn, MemInsn):
        if insn.is_nop:
            return "NOP"
        return "STORE" if insn.opcode == Opcode.STORE else f"LOAD {insn.memory_type.name}"
    if isinstance(insn, GemmInsn):
        return "GEMM"
    if isinstance(insn, AluInsn):
        return "ALU"
    return "FINISH"


def trace_events(insns, sched) -> list[dict]:
    """One record per instruction: index, module, kind, start, end, text, and what held it back:
    `token_wait` cycles just before `start` waiting for the tokens it pops (`pops`, queue
    names), `fetch_wait` cycles its module sat idle because the instruction was not yet
    dispatched. A timeline draws [start - token_wait, start) as the token wait."""
    return [{"index": i, "module": Module(int(sched.module[i])).name.lower(),
             "kind": insn_kind(insn), "start": int(sched.start[i]), "end": int(sched.end[i]),
             "text": format_insn(insn), "token_wait": int(sched.token_stall[i]),
             "fetch_wait": int(sched.cmd_stall[i]), "pops": insn.pops()}
            for i, insn in enumerate(insns)]


def wait_slice(event: dict) -> tuple[int, int, str] | None:
    """(start, end, label) of the token wait before an instruction, None if it did not wait."""
    wait = event.get("token_wait", 0)
    if wait <= 0:
        return None
    return event["start"] - wait, event["start"], "wait " + "+".join(event.get("pops") or ["token"])


def chrome_trace(events: list[dict], clock_mhz: float) -> dict:
    """Chrome / Perfetto trace JSON (microseconds at the configured clock): one track per
    module, each instruction a slice, each token wait a slice of its own just before it."""
    tids = {"load": 1, "compute": 2, "store": 3}
    out = [{"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": name}}
           for name, tid in tids.items()]
    for e in events:
        wait = wait_slice(e)
        if wait is not None:
            out.append({"name": wait[2], "cat": "token wait", "ph": "X", "pid": 0, "tid": tids[e["module"]],
                        "ts": wait[0] / clock_mhz, "dur": (wait[1] - wait[0]) / clock_mhz, "cname": "grey",
                        "args": {"before_index": e["index"], "cycles": wait[1] - wait[0]}})
        out.append({"name": e["text"].split(" [")[0][:40], "cat": "instruction", "ph": "X", "pid": 0,
                    "tid": tids[e["module"]], "ts": e["start"] / clock_mhz,
                    "dur": max(e["end"] - e["start"], 0) / clock_mhz,
                    "args": {"index": e["index"], "insn": e["text"], "start_cycle": e["start"],
                             "end_cycle": e["end"]}})
    return {"traceEvents": out, "displayTimeUnit": "ns"}
