"""The answer a board's DSE gives: its fastest configuration that fits the board's part.

A row competes when it compiled and ran (status ok), its resources are known (synth_status ok)
and hold in the part (`fits` names it), and every layer the model offloads found a tiling:
a row with untiled layers runs them on the CPU, which its latency leaves out, so it would win
unfairly. Among those the lowest latency wins; equal latencies go to the fewer DSP, then
LUT, then block RAM, UltraRAM, then the sweep's order."""
from __future__ import annotations


def competes(row: dict, part: str) -> bool:
    return (row.get("status") == "ok" and row.get("synth_status") == "ok" and row.get("ms") is not None
            and part in (row.get("fits") or ()) and not row.get("untiled"))


def fastest_fitting(rows: list[dict], part: str) -> dict | None:
    """The winning row (see the module docstring), or None when no row fits the part."""
    ranked = [(r["ms"], r.get("dsp", 0), r.get("lut", 0), r.get("bram36", 0), r.get("uram") or 0, k)
              for k, r in enumerate(rows) if competes(r, part)]
    return rows[min(ranked)[-1]] if ranked else None
