"""Timelines of accelerator runs: the load, compute and store lanes over time, one bar per
instruction coloured by what it does, and the token waits hatched in grey just before the
instruction that waited (the picture of VTA's latency-hiding figure). Blank lane time is
idle: nothing dispatched to that module yet, or nothing left for it to do.

The records are the simulator's trace (vdla.simulator.stats.trace_events), so a timeline
needs a device opened with trace=True. A run of several launches (one per accelerator step
of a model) is laid out launch after launch on one cycle axis, each launch named by its
graph node.
"""
from __future__ import annotations

from dataclasses import dataclass

from vdla.hw.errors import ConfigError
from vdla.simulator.stats import wait_slice

LANES = ("load", "compute", "store")
# colour per instruction kind (vdla.simulator.stats.insn_kind); loads of the compute module
# (UOP, ACC) share the load colours' family so the eye reads "data moving" in every lane
KIND_COLOURS = {
    "LOAD INP": "#6baed6", "LOAD WGT": "#2171b5", "LOAD UOP": "#c6dbef", "LOAD ACC": "#9ecae1",
    "LOAD ACC_8BIT": "#41b6c4", "GEMM": "#e6550d", "ALU": "#fdae6b", "STORE": "#31a354",
    "NOP": "#d9d9d9", "FINISH": "#636363",
}
WAIT_COLOUR = "#bdbdbd"


class TimelineError(ConfigError, ValueError):
    """A timeline was asked for without the records it is drawn from."""


@dataclass
class Segment:
    """One launch on the shared cycle axis: its name (graph node), first cycle, length, records."""
    name: str
    offset: int
    cycles: int
    events: list


def segments_of(executor, layer: str | None = None) -> list[Segment]:
    """The last run's launches in step order, back to back; `layer` keeps only that step's."""
    segments, offset, names = [], 0, []
    for step, _ in executor.steps:
        launch = executor.last_launches.get(step.name)
        if launch is None:
            continue
        names.append(step.name)
        if launch.trace is None:
            raise TimelineError(f"step {step.name!r} ran without a trace: open the simulator device with "
                                "trace=True (vdla run does so for --timeline and --trace)")
        if layer is None or step.name == layer:
            segments.append(Segment(step.name, offset if layer is None else 0, launch.cycles, launch.trace))
        offset += launch.cycles
    if not names:
        raise TimelineError("the run launched nothing on the accelerator, so there is no timeline to draw")
    if not segments:
        raise TimelineError(f"no accelerator step named {layer!r}; the accelerator steps are: {', '.join(names)}")
    return segments


def lane_summary(segments: list[Segment]) -> dict:
    """Per lane: busy cycles, token-wait cycles and the fraction of the run each takes."""
    total = sum(s.cycles for s in segments) or 1
    out = {}
    for lane in LANES:
        events = [e for s in segments for e in s.events if e["module"] == lane]
        busy = sum(e["end"] - e["start"] for e in events)
        wait = sum(e.get("token_wait", 0) for e in events)
        out[lane] = {"busy_cycles": busy, "wait_cycles": wait, "busy": busy / total, "wait": wait / total}
    return out


def auto_window(segments: list[Segment], gemms: int = 24) -> tuple[int, int] | None:
    """A zoom window from the start of the run to the end of its `gemms`-th GEMM/ALU (None when
    the whole run is short enough to read without one)."""
    compute = [s.offset + e["end"] for s in segments for e in s.events if e["kind"] in ("GEMM", "ALU")]
    total = sum(s.cycles for s in segments)
    if len(compute) <= gemms:
        return None
    end = sorted(compute)[gemms - 1]
    return (0, end) if end < 0.8 * total else None


def _bars(segments: list[Segment], window: tuple[int, int] | None):
    """{(lane, kind or 'wait'): [(x, width), ...]} in cycles, clipped to the window."""
    lo, hi = window if window else (0, float("inf"))
    bars = {}

    def add(lane, kind, a, b):
        a, b = max(a, lo), min(b, hi)
        if b > a:
            bars.setdefault((lane, kind), []).append((a, b - a))
    for s in segments:
        for e in s.events:
            wait = wait_slice(e)
            if wait is not None:
                add(e["module"], "wait", s.offset + wait[0], s.offset + wait[1])
            # zero-length bars (FINISH, NOPs) still get a sliver so the eye finds them
            add(e["module"], e["kind"], s.offset + e["start"], s.offset + max(e["end"], e["start"] + 1))
    return bars


def _draw_lanes(ax, segments, window, clock_mhz, label_segments: bool) -> set:
    bars = _bars(segments, window)
    ys = {lane: len(LANES) - 1 - k for k, lane in enumerate(LANES)}
    kinds = set()
    for (lane, kind), spans in bars.items():
        y = ys[lane] - 0.35
        if kind == "wait":
            ax.broken_barh(spans, (y, 0.7), facecolors="white", edgecolors=WAIT_COLOUR, hatch="////",
                           linewidth=0.0)
        else:
            # in a zoom, thin white edges tell back-to-back instructions of one kind apart
            ax.broken_barh(spans, (y, 0.7), facecolors=KIND_COLOURS.get(kind, "#969696"),
                           edgecolors="white", linewidth=0.4 if window else 0.0)
        kinds.add(kind)
    ax.set_yticks([ys[lane] for lane in LANES])
    ax.set_yticklabels(LANES)
    ax.set_ylim(-0.6, len(LANES) - 0.4)
    total = sum(s.cycles for s in segments)
    lo, hi = window if window else (0, total)
    ax.set_xlim(lo, hi)
    ax.set_xlabel(f"cycle ({clock_mhz:g} MHz: {(hi - lo) / clock_mhz:,.1f} us shown)")
    if len(segments) > 1:
        for s in segments[1:]:
            if lo < s.offset < hi:
                ax.axvline(s.offset, color="black", linewidth=0.4, alpha=0.5)
        if label_segments:   # the launches' graph nodes along the top edge, where there is room for them
            shown = [s for s in segments if lo <= s.offset + s.cycles / 2 <= hi and s.cycles >= 0.012 * (hi - lo)]
            top = ax.secondary_xaxis("top")
            top.set_xticks([s.offset + s.cycles / 2 for s in shown])
            top.set_xticklabels([s.name for s in shown], fontsize=6, rotation=30 if len(shown) > 8 else 0,
                                ha="left" if len(shown) > 8 else "center")
            top.tick_params(length=0)
    return kinds


def draw_timeline(segments: list[Segment], path: str, title: str = "", clock_mhz: float = 100.0,
                  window: tuple[int, int] | None = None, zoom: bool = True) -> dict:
    """Write the timeline PNG: the whole run, and below it a zoom (`window` in cycles, else
    auto_window) where the bars of single instructions can be told apart. -> lane_summary."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    if not segments:
        raise TimelineError("no launches to draw")
    if window is not None:
        lo, hi = window
        if not (isinstance(lo, int) and isinstance(hi, int)) or lo < 0 or hi <= lo:
            raise TimelineError(f"timeline window {window!r}: expected START < END cycles, START >= 0")
    window = window if window is not None else (auto_window(segments) if zoom else None)
    rows = 2 if window else 1
    fig, axes = plt.subplots(rows, 1, figsize=(13, 2.2 + 1.9 * rows), squeeze=False)
    summary = lane_summary(segments)
    kinds = _draw_lanes(axes[0][0], segments, None, clock_mhz, label_segments=True)
    total = sum(s.cycles for s in segments)
    head = title or "accelerator timeline"
    lanes = "   ".join(f"{lane}: busy {summary[lane]['busy']:.0%}, token wait {summary[lane]['wait']:.0%}"
                       for lane in LANES)
    axes[0][0].set_title(f"{head}\n{total:,} cycles = {total / (clock_mhz * 1e3):.3f} ms    {lanes}", fontsize=9)
    if window:
        kinds |= _draw_lanes(axes[1][0], segments, window, clock_mhz, label_segments=False)
        axes[1][0].set_title(f"zoom: cycles {window[0]:,} to {window[1]:,}", fontsize=8)
        axes[0][0].axvspan(*window, color="#fee391", alpha=0.3, linewidth=0, zorder=0)
    order = [k for k in KIND_COLOURS if k in kinds]
    handles = [Patch(facecolor=KIND_COLOURS[k], label=k) for k in order]
    handles.append(Patch(facecolor="white", edgecolor=WAIT_COLOUR, hatch="////", label="token wait"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return summary


def write_timeline(executor, path: str, layer: str | None = None, title: str = "") -> dict:
    """The last run of `executor` (a device with traces) as a timeline PNG. -> lane_summary."""
    segments = segments_of(executor, layer)
    return draw_timeline(segments, path, title, executor.device.config.clock_mhz)
