"""`python -m vdla.hw.rtl.sim lint` is clean for every config the RTL supports: Verilator's
-Wall lint (the only waivers are in the sources, each with its reason; see
vdla_hw/rtl/README.md) and no source restating a fact of the generated package. A config
with other widths and depths reaches the RTL through the package alone."""
import json

import pytest

from vdla.hw import load_config, rtl_params, synth
from vdla.hw.rtl import RTL_DIR, SOURCES
from vdla.hw.rtl.sim.__main__ import main as rtl_sim_main
from vdla.hw.rtl.sim.build import lint
from vdla.hw.rtl.sim.facts import check_sources
from vdla.hw.rtl_params import check_supported

from .test_random_programs import NARROW, SMALL


@pytest.mark.parametrize("name", ["pynq", "ultra96", "small"])
def test_lint_command_is_clean(name, tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(load_config(SMALL if name == "small" else name).to_dict()))
    assert rtl_sim_main(["lint", "--config", str(config)]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.strip().endswith("clean")


def test_the_unchanged_rtl_builds_for_other_widths_and_depths(tmp_path):
    """The narrow config moves fields and changes every width the package states; the same
    sources elaborate (Verilator), parse (Yosys) and restate nothing. test_random_programs
    runs its programs against the simulator ('narrow')."""
    narrow, default = load_config(NARROW), load_config("pynq")
    package = rtl_params.package_text(narrow)
    for line in ("localparam int BUS_BITS = 32;", "localparam int INSN_BEATS = 4;", "localparam int BLOCK = 4;",
                 "localparam int GEMM_DST_FACTOR_IN_LSB = 64;", "localparam int UOPS_PER_BEAT = 1;"):
        assert line in package and line not in rtl_params.package_text(default), line
    assert lint(narrow, tmp_path) == []
    assert check_sources(narrow, [RTL_DIR / name for name in SOURCES]) == []
    assert synth.check_sources(narrow) == []


def test_unsupported_configs_are_refused_with_the_reason():
    wide = load_config({"bus_width_bits": 256})   # 16-byte INP elements on a 32-byte bus
    with pytest.raises(ValueError, match="not a multiple of the bus width"):
        check_supported(wide)
    # 512 lanes: one LOAD LUT element would hold more lanes than the table has entries
    with pytest.raises(ValueError, match="table entry per lane"):
        check_supported(load_config({"LOG_BATCH": 3, "LOG_BLOCK": 6}))
    check_supported(load_config({"LOG_BATCH": 3, "LOG_BLOCK": 5}))   # 256 lanes: a one-element table


def test_timing_values_below_the_pipeline_are_refused():
    from vdla.hw import Timing
    for key, value, reason in (("gemm_pipeline_depth", 3, "gemm_pipeline_depth"), ("gemm_setup_cycles", 1, "setup"),
                               ("dispatch_delay", 2, "dispatch_delay"), ("acc_raw_min_distance", 1, "forward")):
        doc = load_config("pynq").to_dict()
        doc["timing"] = {**Timing().to_dict(), key: value}
        with pytest.raises(ValueError, match=reason):
            check_supported(load_config(doc))


def test_a_build_is_keyed_by_where_cocotb_lives(monkeypatch):
    """The simulation binary links cocotb's VPI library by path: a build cached by another
    environment (a CI clone since deleted) must not be reused, or it fails to start."""
    import importlib.util
    from pathlib import Path

    from vdla.hw.rtl.sim import build
    config = load_config("pynq")
    here = build._digest(config)
    real = importlib.util.find_spec

    class Elsewhere:
        origin = str(Path("/elsewhere/site-packages/cocotb/__init__.py"))

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: Elsewhere if name == "cocotb" else real(name))
    assert build._digest(config) != here
