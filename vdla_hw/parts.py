"""FPGA parts a VDLA instance may be built for, and their resource limits (the vendors' data
sheets: Zynq-7000 DS190, Zynq UltraScale+ DS891). The figures compared against them come from
vdla.hw.synth, which maps to 7-series primitives for every part: for the UltraScale+ parts
(DSP48E2, RAMB36E2) the counts are an estimate of the same order, and their UltraRAM (xczu7ev:
96 blocks of 288 Kib) is not counted, so a fit there is judged on block RAM alone."""
from __future__ import annotations

RESOURCES = ("lut", "ff", "dsp", "bram36")

# part -> limits; `boards` says where a user meets the part
PARTS = {
    "xc7z010": {"lut": 17600, "ff": 35200, "dsp": 80, "bram36": 60, "boards": "Zybo Z7-10"},
    "xc7z020": {"lut": 53200, "ff": 106400, "dsp": 220, "bram36": 140, "boards": "PYNQ-Z1, PYNQ-Z2"},
    "xczu3eg": {"lut": 70560, "ff": 141120, "dsp": 360, "bram36": 216, "boards": "Ultra96"},
    "xczu7ev": {"lut": 230400, "ff": 460800, "dsp": 1728, "bram36": 312, "boards": "ZCU104"},
}


def limits(part: str) -> dict:
    """{lut, ff, dsp, bram36} of a part; ValueError naming the known parts otherwise."""
    if part not in PARTS:
        raise ValueError(f"unknown FPGA part {part!r}; known parts: {', '.join(PARTS)}")
    return {k: PARTS[part][k] for k in RESOURCES}


def fits(figures: dict, part: str = "xc7z020") -> bool:
    """Every resource at or under the part's limit (a figure missing from `figures` is an error)."""
    missing = [k for k in RESOURCES if k not in figures]
    if missing:
        raise ValueError(f"resource figures lack {', '.join(missing)}; expected {', '.join(RESOURCES)}")
    return all(figures[k] <= v for k, v in limits(part).items())


def fitting_parts(figures: dict) -> list[str]:
    """The parts (smallest first, as listed in PARTS) whose limits hold the figures."""
    return [part for part in PARTS if fits(figures, part)]
