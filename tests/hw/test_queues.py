"""Unit benches of the command FIFO and the token queue (see bench_queues.py)."""
import os
import sys
from pathlib import Path

import pytest

from vdla.hw.isa import INSN_BITS
from vdla.hw.rtl.sim.build import build_block, run

# the bench module is imported as hw.bench_queues inside the simulator process
_PYTHONPATH = os.pathsep.join([str(Path(__file__).resolve().parents[1])] + [p for p in sys.path if p])


def _passed(results_xml) -> tuple[int, int]:
    from cocotb_tools.runner import get_results
    return get_results(results_xml)


@pytest.mark.parametrize("depth,delay", [(4, 1), (5, 3)])
def test_token_queue(depth, delay, tmp_path):
    build_dir = build_block("vdla_token_queue", ["vdla_token_queue.sv"], {"DEPTH": depth, "DELAY": delay})
    results = run(build_dir, "hw.bench_queues", {"QUEUE_DEPTH": str(depth), "QUEUE_DELAY": str(delay), "PYTHONPATH": _PYTHONPATH},
                  tmp_path, testcase="token_queue_matches_model", top="vdla_token_queue")
    tests, failed = _passed(results)
    assert tests == 1 and failed == 0, (tmp_path / "sim.log").read_text()[-3000:]


@pytest.mark.parametrize("depth", [3])
def test_cmd_fifo(depth, tmp_path):
    build_dir = build_block("vdla_cmd_fifo", ["vdla_cmd_fifo.sv"], {"DEPTH": depth, "WIDTH": INSN_BITS})
    results = run(build_dir, "hw.bench_queues", {"QUEUE_DEPTH": str(depth), "PYTHONPATH": _PYTHONPATH}, tmp_path,
                  testcase="cmd_fifo_matches_model", top="vdla_cmd_fifo")
    tests, failed = _passed(results)
    assert tests == 1 and failed == 0, (tmp_path / "sim.log").read_text()[-3000:]
