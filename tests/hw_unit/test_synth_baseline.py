"""Resource regression guard: the RTL, synthesized for the default config, must not silently grow.

vdla_hw/synth/baseline_<target>.json (pynq: the default config) holds the figures of the last accepted synthesis
(`python -m vdla.hw.synth --write-baseline` writes it). This test synthesizes the RTL again
(one Yosys run of about 3-4 minutes on the CI machine: a single test function, so a CI run, xdist or not,
synthesizes once; the result is cached in pytest's cache under a hash of the sources, the
generated package, the flow and the Yosys version, so a rerun without RTL changes is free) and fails
if a figure grows beyond the tolerance below. Yosys is deterministic for the same sources, so
the tolerance only absorbs small deliberate RTL changes; a larger growth needs a new baseline
committed with the change that causes it (and a reviewer who agrees).
"""
import json

import pytest

from vdla.hw import load_config, synth

# LUT/FF: 2% or 100 cells, whichever is larger; DSP and BRAM are scarce on the xc7z020: no growth.
TOLERANCE = {"lut": (0.02, 100), "ff": (0.02, 100), "dsp": (0.0, 0), "bram36": (0.0, 0)}


def allowed(key: str, base: float) -> float:
    rel, absolute = TOLERANCE[key]
    return base + max(rel * base, absolute)


def test_tolerance_rule():
    assert allowed("lut", 1000) == 1100 and allowed("lut", 20000) == 20400
    assert allowed("dsp", 220) == 220 and allowed("bram36", 70.5) == 70.5


@pytest.mark.slow
def test_rtl_resources_do_not_grow_beyond_the_baseline(request):
    config = load_config("pynq")
    path = synth.baseline_path(config)
    if not path.exists():
        pytest.skip(f"no baseline at {path}: run `python -m vdla.hw.synth --write-baseline` once the RTL is complete")
    baseline = json.loads(path.read_text())
    key = f"vdla/synth/{synth.input_digest(config)}"
    result = request.config.cache.get(key, None)
    if result is None:
        result = synth.synthesize(config, top=baseline["top"])
        request.config.cache.set(key, result)
    grown = {key: (baseline[key], result[key]) for key in TOLERANCE if result[key] > allowed(key, baseline[key])}
    assert not grown, (f"resources grew beyond the baseline (baseline, now): {grown}; if intended, refresh "
                       f"{path.name} with `python -m vdla.hw.synth --write-baseline` in the same commit")
    if baseline["fits_xc7z020"]:
        assert result["fits_xc7z020"], f"the design no longer fits the xc7z020: {result}"
