"""The DSE with real Yosys on one small configuration (BLOCK 4, 32-bit bus, small SRAMs: the
smallest RTL the flow builds, ~25 s of synthesis): resources, part fits and the synthesis cache."""
import json

import pytest

from vdla.compiler.dse import explore
from vdla.compiler.frontend.example_models import small_residual_cnn
from vdla.hw.parts import fitting_parts

SMALL = {"LOG_BLOCK": 2, "bus_width_bits": 32, "LOG_UOP_BUFF_SIZE": 10, "LOG_INP_BUFF_SIZE": 10,
         "LOG_WGT_BUFF_SIZE": 10, "LOG_ACC_BUFF_SIZE": 12}


@pytest.mark.slow
def test_real_synthesis_of_a_small_config(tmp_path):
    result = explore(small_residual_cnn(), {"points": [SMALL, {**SMALL, "clock_mhz": 150}]}, tmp_path, log=None)
    assert result.synthesized == 1                       # two clocks, one RTL
    slow, fast = result.rows
    assert slow["status"] == fast["status"] == "ok" and slow["synth_status"] == "ok", slow.get("synth_error")
    figures = {k: slow[k] for k in ("lut", "ff", "dsp", "bram36")}
    # 16 int8 MACs and a few KiB of SRAM: a few thousand LUTs, some DSPs, a handful of BRAMs
    assert 1000 < figures["lut"] < 17600 and 0 < figures["dsp"] <= 80 and 0 < figures["bram36"] <= 60
    assert slow["fits"] == fitting_parts(figures) and slow["smallest_part"] == "xc7z010"
    assert {k: fast[k] for k in figures} == figures and fast["ms"] < slow["ms"]
    assert "yosys" in slow["synth_tool"]
    [cached] = list((tmp_path / "cache" / "synth").glob("*.json"))
    assert json.loads(cached.read_text())["lut"] == figures["lut"]
    assert result.pareto == [fast["id"]]
