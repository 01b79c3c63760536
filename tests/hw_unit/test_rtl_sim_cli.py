"""`python -m vdla.hw.rtl.sim`'s --config errors: one line naming the problem, exit 2, no
traceback. (The commands themselves, which need Verilator, are tested in tests/hw/test_lint.py.)"""
import json
import subprocess
import sys

from vdla.hw import PRESETS
from vdla.hw.rtl.sim.__main__ import main


def test_an_unknown_config_is_a_clean_error_listing_the_presets():
    proc = subprocess.run([sys.executable, "-m", "vdla.hw.rtl.sim", "lint", "--config", "small"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("python -m vdla.hw.rtl.sim: error: --config: unknown hardware config 'small'")
    assert ", ".join(PRESETS) in proc.stderr
    assert "Traceback" not in proc.stderr and "ValueError" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_config_the_rtl_cannot_build_is_refused_before_any_tool_runs(tmp_path, capsys):
    config = tmp_path / "wide.json"
    config.write_text(json.dumps({"bus_width_bits": 256}))   # 16-byte elements on a 32-byte bus
    assert main(["package", "--config", str(config)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "does not support config" in err and "not a multiple of the bus width" in err
