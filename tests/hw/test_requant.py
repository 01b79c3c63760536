"""Unit bench of one requantizer lane (vdla_requant.sv, see bench_requant.py) against the
statement, vdla.hw.requantizer.requantize: about 19 000 values on settings chosen for the
datapath's corners, at the default pipeline depth and at the shortest and a longer one (the
RTL's stages follow Timing.requant_pipeline_depth through the package)."""
import os
import sys
from pathlib import Path

import pytest

from vdla.hw import Timing, load_config, rtl_params
from vdla.hw.rtl import RTL_DIR
from vdla.hw.rtl.sim import build

# the bench module is imported as hw.bench_requant inside the simulator process
_PYTHONPATH = os.pathsep.join([str(Path(__file__).resolve().parents[1])] + [p for p in sys.path if p])
TOP = "vdla_requant"


def _build(config) -> Path:
    """The lane alone, with the config's generated package (cached like the accelerator's builds)."""
    return build._locked_build(build.default_root(), f"{TOP}-{config.name}-{build._digest(config)}", TOP,
                               lambda build_dir: [Path(rtl_params.write_package(config, build_dir / "gen")),
                                                  RTL_DIR / f"{TOP}.sv"], {}, False)


@pytest.mark.parametrize("depth", [Timing().requant_pipeline_depth, 1, 5])
def test_requant_lane_matches_the_statement(depth, tmp_path):
    doc = load_config("pynq").to_dict()
    doc["timing"] = {**Timing().to_dict(), "requant_pipeline_depth": depth}
    config = load_config(doc)
    results = build.run(_build(config), "hw.bench_requant",
                        {"REQUANT_DEPTH": str(depth), "PYTHONPATH": _PYTHONPATH}, tmp_path,
                        testcase="requant_lane_matches_statement", top=TOP)
    from cocotb_tools.runner import get_results
    tests, failed = get_results(results)
    assert tests == 1 and failed == 0, (tmp_path / "sim.log").read_text()[-3000:]
