"""docs/TUTORIAL.md as a script: an int8 dense layer written once as a tensor expression,
scheduled for the CPU and for VDLA, run on both (the accelerator on its cycle-exact
simulator) and compared: the loop IR of each, the first instructions of the accelerator's
stream, then four VDLA schedules' cycles against the GEMM bound beside the CPU's time here.

    python benchmarks/te_tutorial.py

It runs the tutorial's Python blocks in order, as a reader pastes them, so the two cannot
drift apart (tests/test_readme.py runs the same blocks in CI)."""
from __future__ import annotations

import argparse
import pathlib
import re

TUTORIAL = pathlib.Path(__file__).resolve().parents[1] / "docs" / "TUTORIAL.md"


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    namespace: dict = {}
    for block in re.findall(r"```python\n(.*?)```", TUTORIAL.read_text(), re.S):
        exec(compile(block, str(TUTORIAL), "exec"), namespace)      # noqa: S102
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
