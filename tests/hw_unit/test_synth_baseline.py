"""Resource regression guard: the RTL, synthesized for the default config, must not silently grow.

vdla_hw/synth/baseline_<target>.json (pynq: the default config) holds the figures of the last accepted synthesis
(`python -m vdla.hw.synth --write-baseline` writes it) and the hash of what they were synthesized from
(synth.input_digest: the sources, the generated package, the flow and the Yosys version). When that hash
is today's, the RTL is the baseline's and the test is skipped, saying so. Otherwise it synthesizes the RTL
again (one Yosys run of about 3 minutes on the CI machine: a single test function, so a CI run, xdist or
not, synthesizes once; the result is cached in pytest's cache under the same hash, so a rerun without RTL
changes is free) and fails if a figure grows beyond the tolerance below. Yosys is deterministic for the same sources, so
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


def test_the_digest_that_skips_synthesis_moves_with_every_source(tmp_path):
    """The skip trusts synth.input_digest: a copy of the RTL hashes alike, a one-byte change in any
    of its synthesized files does not."""
    import shutil
    config = load_config("pynq")
    rtl = tmp_path / "rtl"
    shutil.copytree(synth.RTL_DIR, rtl)
    same = synth.input_digest(config, rtl)
    assert same == synth.input_digest(config)
    for source in synth.rtl_sources(rtl):
        text = source.read_bytes()
        source.write_bytes(text + b" ")
        assert synth.input_digest(config, rtl) != same, f"{source.name} is not in the digest"
        source.write_bytes(text)
    assert synth.input_digest(config, rtl) == same


@pytest.mark.slow
def test_rtl_resources_do_not_grow_beyond_the_baseline(request):
    config = load_config("pynq")
    path = synth.baseline_path(config)
    if not path.exists():
        pytest.skip(f"no baseline at {path}: run `python -m vdla.hw.synth --write-baseline` once the RTL is complete")
    baseline = json.loads(path.read_text())
    digest = synth.input_digest(config)
    if baseline.get("input_digest") == digest:
        pytest.skip(f"the RTL, package, flow and Yosys are those {path.name} was synthesized from "
                    f"(digest {digest[:12]}): its figures are today's")
    key = f"vdla/synth/{digest}"
    result = request.config.cache.get(key, None)
    if result is None:
        result = synth.synthesize(config, top=baseline["top"])
        request.config.cache.set(key, result)
    grown = {key: (baseline[key], result[key]) for key in TOLERANCE if result[key] > allowed(key, baseline[key])}
    assert not grown, (f"resources grew beyond the baseline (baseline, now): {grown}; if intended, refresh "
                       f"{path.name} with `python -m vdla.hw.synth --write-baseline` in the same commit")
    if baseline["fits_xc7z020"]:
        assert result["fits_xc7z020"], f"the design no longer fits the xc7z020: {result}"
