"""The figures a benchmark saves for README's figure spans (benchmarks/figures.py renders them):
benchmarks/results/NAME.json, with the host that measured them, since timings belong to it."""
from __future__ import annotations

import json
import os
import platform


def host_label() -> str:
    """The CPU's model name and how many cores this process may use: "AMD EPYC 9R14, 2 cores"."""
    name = ""
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{name or platform.processor() or platform.machine()}, {cores} cores"


def save(path: str, figures: dict) -> None:
    """Write `figures` and the host to `path` (JSON, keys as the benchmark's --json prints them)."""
    with open(path, "w") as f:
        json.dump({**figures, "host": figures.get("host") or host_label()}, f, indent=1)
        f.write("\n")
