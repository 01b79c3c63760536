"""The Vivado build inputs: the board wrapper elaborates with the RTL (Verilator lint) and the
build parameters come from the board manifest and hardware config. Vivado itself is not run."""
import os
import runpy
import subprocess
from pathlib import Path

import pytest

from vdla.driver.board import MANIFEST_DIR, load_manifest
from vdla.hw import load_config
from vdla.hw.board_wrapper import READ_MASTERS, WRITE_MASTERS, wrapper_text

BUILD = runpy.run_path(str(MANIFEST_DIR / "build.py"))


@pytest.mark.parametrize("board", ["pynq", "zcu104"])
def test_wrapper_and_rtl_lint_clean(board, tmp_path):
    verilator_env = pytest.importorskip("vdla.hw.rtl.sim.build").verilator_env
    out = BUILD["prepare"](board, tmp_path)
    sources = (out / "sources.txt").read_text().split()
    assert sources[0].endswith("vdla_pkg.sv") and sources[-1].endswith("vdla_axi_top.v")
    result = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", "vdla_axi_top", *sources],
                            env={**os.environ, **verilator_env()}, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    params = dict(line.split(" ", 2)[1:] for line in (out / "params.tcl").read_text().splitlines() if line)
    m = load_manifest(board)
    assert params["part"] == m.part and int(params["clock_mhz"]) == m.clock_mhz
    assert int(params["control_base"], 16) == m.control_base
    assert params["family"] == ("zynq" if board == "pynq" else "zynqmp")


def test_wrapper_ports_follow_config_and_coherence():
    c = load_config("zcu104")
    text = wrapper_text(c, coherent=True)
    for m in READ_MASTERS:
        assert f"input wire [127:0] m_axi_{m}_rdata" in text and f"assign m_axi_{m}_arcache = 4'b1111" in text
    for m in WRITE_MASTERS:
        assert f"output wire [15:0] m_axi_{m}_wstrb" in text
    assert "4'b0011" in wrapper_text(c, coherent=False) and "4'b1111" not in wrapper_text(c, coherent=False)


def test_prepare_only_without_vivado(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no vivado anywhere
    assert BUILD["main"](["pynq", "--out", str(tmp_path / "b")]) == 0
    assert "no vivado on PATH" in capsys.readouterr().out
    assert (tmp_path / "b" / "vdla_axi_top.v").exists()
