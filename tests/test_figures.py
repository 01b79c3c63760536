"""README's figures table (benchmarks/figures.py) is the rendering of the saved benchmark JSON,
and that JSON's deterministic figures (accelerator cycles, MACs offloaded, the ratio to the
GEMM bound) are what the compiler and the cycle-exact simulator give now: a change that moves
them fails here until `python benchmarks/vdla_e2e.py --json --out benchmarks/results/vdla_e2e.json`
and `python benchmarks/figures.py` are run again. Host timings are not in the table."""
from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))       # the benchmarks import their helpers by bare name
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIGURES = _load("figures")
SAVED = json.loads(FIGURES.RESULTS.read_text())


def test_the_readme_table_is_the_saved_figures():
    readme = FIGURES.README.read_text()
    assert FIGURES.rendered(readme, SAVED) == readme, "run python benchmarks/figures.py"
    assert FIGURES.main(["--check"]) == 0


def test_a_changed_figure_makes_the_table_stale():
    readme = FIGURES.README.read_text()
    moved = {name: dict(f) for name, f in SAVED.items()}
    moved["resnet18"]["accel_cycles"] += 1
    assert FIGURES.rendered(readme, moved) != readme


@pytest.mark.parametrize("model", sorted(SAVED))
def test_the_saved_figures_are_the_compilers_now(model):
    now = _load("vdla_e2e").deterministic_figures(model)
    saved = {key: SAVED[model][key] for key in now}
    assert now == saved, (f"{model}: the compiler gives {now}, benchmarks/results/vdla_e2e.json says {saved}: "
                          "run benchmarks/vdla_e2e.py --json --out benchmarks/results/vdla_e2e.json and "
                          "benchmarks/figures.py")


def test_the_readme_spans_are_the_saved_figures():
    readme = FIGURES.README.read_text()
    names = [m["name"] for m in FIGURES.SPAN.finditer(readme)]
    assert set(names) == set(FIGURES.SPANS), "every renderer has its span in README and every span a renderer"
    assert FIGURES.with_spans(readme) == readme, "run python benchmarks/figures.py"


def test_a_changed_result_makes_its_span_stale(monkeypatch):
    readme = FIGURES.README.read_text()
    saved = FIGURES.results
    moved = lambda stem: {**saved(stem), "1vt": {**saved(stem)["1vt"], "cycles": 1}} \
        if stem == "timeline_vthreads" else saved(stem)                      # noqa: E731
    monkeypatch.setattr(FIGURES, "results", moved)
    assert FIGURES.with_spans(readme) != readme


def test_the_saved_timeline_figures_are_the_simulators_now(tmp_path):
    """The cycles and lane occupancy of the C2 conv with one and two virtual threads (deterministic)."""
    out = tmp_path / "timeline.json"
    assert _load("timeline_vthreads").main(["-o", str(tmp_path), "--results", str(out)]) == 0
    now, saved = json.loads(out.read_text()), FIGURES.results("timeline_vthreads")
    assert {k: now[k] for k in ("1vt", "2vt")} == {k: saved[k] for k in ("1vt", "2vt")}, \
        "run benchmarks/timeline_vthreads.py --results benchmarks/results/timeline_vthreads.json"
