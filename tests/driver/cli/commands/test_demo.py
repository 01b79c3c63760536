"""`vdla demo` and benchmarks/latency_hiding.py run end to end and check against numpy
(no timing thresholds here: the figures are the benchmark's to print)."""
import json
import runpy
import sys
from pathlib import Path

from vdla.driver.cli import main

BENCH = Path(__file__).resolve().parents[4] / "benchmarks" / "latency_hiding.py"


def test_demo_matmul_passes(capsys):
    assert main(["demo", "--workload", "matmul", "--virtual-threads", "1"]) == 0
    assert " OK " in capsys.readouterr().out


def test_latency_hiding_benchmark_json_line(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(BENCH), "--json"])
    monkeypatch.syspath_prepend(str(BENCH.parent))       # as when run as a script: its sibling modules import
    try:
        runpy.run_path(str(BENCH), run_name="__main__")
    except SystemExit as exc:
        assert exc.code == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(figures) == {"cycles_1", "cycles_2", "util_1", "util_2", "sim_cycles_per_s", "wall_s"}
    assert 0 < figures["util_1"] <= 1 and 0 < figures["util_2"] <= 1
