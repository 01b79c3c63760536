"""Helpers for the tests that run the `vdla` command on the simulated board."""
import os
import subprocess
import sys

SKIP_REASON = "pynq is not installed here: the tests in tests/pynq_board run in .venv-pynq (see .ci/run)"


def run_cli(args, manifest, timeout=120, **env):
    """`vdla ARGS` in a fresh process, on the simulated board of `manifest` (found by pynq's probe)."""
    environ = {**os.environ, "VDLA_PYNQ_SIM": "1", "VDLA_BOARD": str(manifest), **env}
    code = "import sys; from vdla.driver.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], env=environ, capture_output=True, text=True,
                          timeout=timeout)
