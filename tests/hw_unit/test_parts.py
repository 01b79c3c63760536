"""FPGA part limits (vdla.hw.parts) and the fit verdicts the synthesis and the DSE report."""
import json

import pytest

from vdla.hw import parts, synth


def test_limits_are_the_data_sheet_figures():
    # DS190 (Zynq-7000), DS891 (Zynq UltraScale+), DS987 (the K26 SOM's xck26: the xczu5ev die)
    assert parts.limits("xc7z010") == {"lut": 17600, "ff": 35200, "dsp": 80, "bram36": 60, "uram": 0}
    assert parts.limits("xc7z020") == {"lut": 53200, "ff": 106400, "dsp": 220, "bram36": 140, "uram": 0}
    assert parts.limits("xczu3eg") == {"lut": 70560, "ff": 141120, "dsp": 360, "bram36": 216, "uram": 0}
    assert parts.limits("xck26") == {"lut": 117120, "ff": 234240, "dsp": 1248, "bram36": 144, "uram": 64}
    assert parts.limits("xczu7ev") == {"lut": 230400, "ff": 460800, "dsp": 1728, "bram36": 312, "uram": 96}
    assert synth.XC7Z020 == parts.limits("xc7z020")


def test_the_boards_name_their_parts():
    assert "AUP-ZU3" in parts.PARTS["xczu3eg"]["boards"] and "Ultra96" in parts.PARTS["xczu3eg"]["boards"]
    assert "KV260" in parts.PARTS["xck26"]["boards"]
    assert [parts.family(p) for p in parts.PARTS] == ["xc7", "xc7", "xcup", "xcup", "xcup"]


def test_fit_is_inclusive_and_every_resource_counts():
    for part in ("xczu3eg", "xck26"):
        at = parts.limits(part)
        assert parts.fits(at, part)
        for key in at:
            assert not parts.fits({**at, key: at[key] + 1}, part), (part, key)


def test_ultraram_fit_by_hand():
    # the pynq baseline's logic with its memory as 64 RAMB36 + 12 URAM288 (a Yosys -uram mapping)
    figures = {"lut": 25879, "ff": 8477, "dsp": 176, "bram36": 71.5, "uram": 12}
    assert not parts.fits(figures, "xczu3eg")          # the xczu3eg has no UltraRAM at all
    assert parts.fits(figures, "xck26") and parts.fits(figures, "xczu7ev")
    assert parts.fits({**figures, "uram": 64}, "xck26") and not parts.fits({**figures, "uram": 65}, "xck26")
    assert parts.fitting_parts(figures) == ["xck26", "xczu7ev"]
    # figures of a mapping without UltraRAM (the 7-series flow) use none
    assert parts.fits({"lut": 1, "ff": 1, "dsp": 1, "bram36": 1}, "xczu3eg")


def test_fitting_parts_smallest_first():
    assert parts.fitting_parts({"lut": 100, "ff": 100, "dsp": 1, "bram36": 1}) == list(parts.PARTS)
    # the pynq baseline: too many LUTs and DSPs for the xc7z010, fits the rest
    baseline = json.loads((synth.BASELINE_DIR / "baseline_pynq.json").read_text())
    assert parts.fitting_parts(baseline) == ["xc7z020", "xczu3eg", "xck26", "xczu7ev"]
    assert parts.fitting_parts({"lut": 1, "ff": 1, "dsp": 2000, "bram36": 1}) == []


def test_vivado_device_strings_name_their_part():
    assert parts.part_of("xck26-sfvc784-2LV-c") == "xck26"
    assert parts.part_of("xczu3eg-sfvc784-2-e") == parts.part_of("xczu3eg-sbva484-1-e") == "xczu3eg"
    assert parts.part_of("xc7z020clg400-1") == "xc7z020"
    with pytest.raises(ValueError, match="device 'xc7z045ffg900-2' is none of the known parts"):
        parts.part_of("xc7z045ffg900-2")


def test_errors_name_the_part_or_the_missing_figure():
    with pytest.raises(ValueError, match="unknown FPGA part 'xc7z045'; known parts: xc7z010, xc7z020"):
        parts.limits("xc7z045")
    with pytest.raises(ValueError, match="lack dsp, bram36"):
        parts.fits({"lut": 1, "ff": 1})
