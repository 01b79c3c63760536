"""FPGA part limits (vdla.hw.parts) and the fit verdicts the synthesis and the DSE report."""
import json

import pytest

from vdla.hw import parts, synth


def test_limits_are_the_data_sheet_figures():
    assert parts.limits("xc7z010") == {"lut": 17600, "ff": 35200, "dsp": 80, "bram36": 60}
    assert parts.limits("xc7z020") == {"lut": 53200, "ff": 106400, "dsp": 220, "bram36": 140}
    assert parts.limits("xczu3eg") == {"lut": 70560, "ff": 141120, "dsp": 360, "bram36": 216}
    assert parts.limits("xczu7ev") == {"lut": 230400, "ff": 460800, "dsp": 1728, "bram36": 312}
    assert synth.XC7Z020 == parts.limits("xc7z020")


def test_fit_is_inclusive_and_every_resource_counts():
    at = parts.limits("xczu3eg")
    assert parts.fits(at, "xczu3eg")
    for key in at:
        assert not parts.fits({**at, key: at[key] + 1}, "xczu3eg"), key


def test_fitting_parts_smallest_first():
    assert parts.fitting_parts({"lut": 100, "ff": 100, "dsp": 1, "bram36": 1}) == list(parts.PARTS)
    # the pynq baseline: too many LUTs and DSPs for the xc7z010, fits the rest
    baseline = json.loads((synth.BASELINE_DIR / "baseline_pynq.json").read_text())
    assert parts.fitting_parts(baseline) == ["xc7z020", "xczu3eg", "xczu7ev"]
    assert parts.fitting_parts({"lut": 1, "ff": 1, "dsp": 2000, "bram36": 1}) == []


def test_errors_name_the_part_or_the_missing_figure():
    with pytest.raises(ValueError, match="unknown FPGA part 'xc7z045'; known parts: xc7z010, xc7z020"):
        parts.limits("xc7z045")
    with pytest.raises(ValueError, match="lack dsp, bram36"):
        parts.fits({"lut": 1, "ff": 1})
