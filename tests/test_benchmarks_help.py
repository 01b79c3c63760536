"""Every benchmark runs as `python benchmarks/NAME.py` from any folder, not only from inside
benchmarks/: each one's `--help` is launched by its absolute path from a temporary folder.

Its sibling helpers (e2e_cpu, interleave, ort_peer, handwritten, ...) import by bare name because
Python puts a script's own folder first on the import path, wherever it is started from. The
helpers without a `__main__` block are not benchmarks and are reached through those that are.
`--help` parses the arguments only, so this stays cheap; a benchmark whose imports need an
optional package that is not installed here is skipped, naming it.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if 'if __name__ == "__main__"' in p.read_text())
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def _ours(top: str) -> bool:
    """A module of this checkout: vdla, or a helper beside the benchmarks (a file or a package)."""
    return top == "vdla" or (BENCHMARKS / f"{top}.py").exists() or (BENCHMARKS / top).is_dir()


def test_the_benchmarks_are_found():
    assert {"vdla_ops.py", "vdla_e2e.py", "e2e_cpu.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_runs_from_another_folder(script, tmp_path):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    missing = _MISSING.search(done.stderr)
    if done.returncode and missing and not _ours(missing[1].split(".")[0]):
        pytest.skip(f"{script} --help needs {missing[1]}, which is not installed here")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:"), done.stdout
