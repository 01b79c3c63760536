"""Per-layer profiles of a run: where each graph node ran, accelerator cycles (with the
compiled two virtual threads and with one, the same tiles), milliseconds at the
accelerator's clock, GEMM utilization, CPU milliseconds; as a table, a PNG chart in the
manner of the VTA workshop paper's Figure 3, and a Perfetto trace whose instructions name
their graph node."""
from __future__ import annotations

import json
from dataclasses import dataclass

from .executor import Executor


@dataclass
class LayerProfile:
    name: str
    op: str
    placement: str               # "vdla", "cpu" (a compiled kernel or host step), "alias" or "parts" (views)
    cpu_ms: float = 0.0          # host wall time of the step (for vdla steps: data movement + simulation)
    cycles: int = 0              # accelerator cycles, as compiled (two virtual threads)
    cycles_1vt: int = 0          # the same kernel with one virtual thread
    gemm_util: float = 0.0
    clock_mhz: float = 100.0
    dma_bytes: int = 0           # loaded and stored by the kernel's DMA (padding excluded)
    uop_hits: int = 0            # GEMM/ALU instructions whose micro-ops were in the SRAM already
    uop_misses: int = 0          # micro-op loads from DRAM

    @property
    def accel_ms(self) -> float:
        return self.cycles / (self.clock_mhz * 1e3)

    @property
    def accel_ms_1vt(self) -> float:
        return self.cycles_1vt / (self.clock_mhz * 1e3)


def profile_run(artifact, feeds: dict, device=None) -> tuple[dict, list[LayerProfile]]:
    """Run once as compiled and once with one-virtual-thread kernels; -> (outputs, rows)."""
    ex = Executor(artifact, device=device)
    outputs = ex.run(feeds, profile=True)
    rows = []
    clock = ex.device.config.clock_mhz if ex.device is not None else 100.0
    for t in ex.last_timings:
        launch = ex.last_launches.get(t.name)
        kind = {"kernel": "cpu", "host": "cpu"}.get(t.kind, t.kind)
        row = LayerProfile(t.name, t.op, kind, t.seconds * 1e3, clock_mhz=clock)
        if launch is not None:
            row.cycles = launch.cycles
            row.gemm_util = launch.gemm_utilization
            row.cpu_ms = 0.0
            dma, uops = launch.stats.get("dma_bytes", {}), launch.stats.get("uop_cache", {})
            row.dma_bytes = sum(dma.get("load", {}).values()) + dma.get("store", 0)
            row.uop_hits, row.uop_misses = uops.get("hits", 0), uops.get("misses", 0)
        rows.append(row)
    if ex.device is not None and "vdla_programs_1vt" in artifact.header:
        single = Executor(artifact, device=ex.device, virtual_threads=1)
        single.run(feeds)
        for row in rows:
            launch = single.last_launches.get(row.name)
            if launch is not None:
                row.cycles_1vt = launch.cycles
    return outputs, rows


def format_table(rows: list[LayerProfile]) -> str:
    """One line per layer: where it ran, its cycles (compiled and on one virtual thread), ms,
    GEMM utilization, DMA kilobytes, micro-op cache hits/misses; CPU ms for the others."""
    width = max([len("layer"), *(len(r.name) for r in rows)]) + 1
    lines = [f"{'layer':<{width}}{'op':<16}{'on':<6}{'cycles':>11}{'1 vt':>11}{'accel ms':>10}{'util':>7}"
             f"{'DMA KB':>9}{'uop hit/miss':>14}{'cpu ms':>9}"]
    for r in rows:
        if r.placement in ("alias", "parts"):
            continue
        if r.placement == "vdla":
            lines.append(f"{r.name:<{width}}{r.op[:15]:<16}{'vdla':<6}{r.cycles:>11,}{r.cycles_1vt:>11,}"
                         f"{r.accel_ms:>10.3f}{r.gemm_util:>7.1%}{r.dma_bytes / 1024:>9.1f}"
                         f"{f'{r.uop_hits}/{r.uop_misses}':>14}{'':>9}")
        else:
            lines.append(f"{r.name:<{width}}{r.op[:15]:<16}{'cpu':<6}{'':>11}{'':>11}{'':>10}{'':>7}{'':>9}{'':>14}"
                         f"{r.cpu_ms:>9.3f}")
    accel = [r for r in rows if r.placement == "vdla"]
    cycles, single = sum(r.cycles for r in accel), sum(r.cycles_1vt for r in accel)
    cpu = sum(r.cpu_ms for r in rows if r.placement == "cpu")
    clock = accel[0].clock_mhz if accel else 100.0
    dma = sum(r.dma_bytes for r in accel) / 1024
    lines.append(f"{'total':<{width + 22}}{cycles:>11,}{single:>11,}{cycles / (clock * 1e3):>10.3f}{'':>7}{dma:>9.1f}"
                 f"{'':>14}{cpu:>9.3f}")
    if single:
        lines.append(f"every kernel on one virtual thread: {single:,} cycles, {single / max(cycles, 1):.2f}x the "
                     "compiled kernels (which keep two where the simulator measured them faster)")
    return "\n".join(lines)


def write_chart(rows: list[LayerProfile], path: str, title: str = "") -> None:
    """Per layer: accelerator ms with one and with two virtual threads, CPU ms (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [r for r in rows if r.placement in ("vdla", "cpu")]
    x = range(len(shown))
    fig, ax = plt.subplots(figsize=(max(8.0, 0.28 * len(shown)), 4.5))
    width = 0.4
    ax.bar([i - width / 2 for i in x], [r.accel_ms_1vt if r.placement == "vdla" else 0 for r in shown], width,
           label="accelerator, 1 virtual thread", color="#9ecae1")
    ax.bar([i + width / 2 for i in x], [r.accel_ms if r.placement == "vdla" else 0 for r in shown], width,
           label="accelerator, 2 virtual threads", color="#3182bd")
    ax.bar(list(x), [r.cpu_ms if r.placement == "cpu" else 0 for r in shown], width, label="CPU",
           color="#e6550d")
    ax.set_yscale("log")
    ax.set_ylabel("ms per layer")
    ax.set_xticks(list(x))
    ax.set_xticklabels([r.name for r in shown], rotation=90, fontsize=6)
    ax.set_title(title or "per-layer time: accelerator (1 and 2 virtual threads) vs CPU")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_trace(executor: Executor, path: str) -> int:
    """The last run's accelerator instructions as a Chrome/Perfetto trace, one launch after
    the other on the accelerator's clock, in the timeline's lanes (load, compute, store; token
    waits as grey slices before the instruction that waited); every event names its graph
    node. -> events."""
    from vdla.simulator.stats import wait_slice   # trace records come from the simulator device
    tids = {"load": 1, "compute": 2, "store": 3}
    events = [{"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": name}}
              for name, tid in tids.items()]
    clock = executor.device.config.clock_mhz
    offset = 0
    for step, _ in executor.steps:
        launch = executor.last_launches.get(step.name)
        if launch is None:
            continue
        for e in launch.trace or []:
            wait = wait_slice(e)
            if wait is not None:   # the same lanes as the timeline PNG: a wait is a slice of its own
                events.append({"name": f"{step.name}: {wait[2]}", "cat": "token wait", "ph": "X", "pid": 0,
                               "tid": tids[e["module"]], "ts": (offset + wait[0]) / clock,
                               "dur": (wait[1] - wait[0]) / clock, "cname": "grey",
                               "args": {"node": step.name, "before_insn": e["text"], "cycles": wait[1] - wait[0]}})
            events.append({"name": f"{step.name}: {e['text'].split(' [')[0][:40]}", "cat": "instruction",
                           "ph": "X", "pid": 0, "tid": tids[e["module"]], "ts": (offset + e["start"]) / clock,
                           "dur": max(e["end"] - e["start"], 0) / clock,
                           "args": {"node": step.name, "op": step.op, "insn": e["text"]}})
        offset += launch.cycles
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f)
    return len(events)
