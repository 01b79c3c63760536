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
