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


# The fabric clock a figure may be quoted at without a timing analysis of its own: VTA's published
# PYNQ design meets 100 MHz, the clock PYNQ boards give the fabric by default. vdla's RTL has no
# timing analysis (Yosys maps it to cells, it does not time paths, and Vivado is not in CI), so a
# faster clock (Ultra96 and ZCU104 at 333 MHz, a DSE's 200 MHz) is an assumption until a Vivado
# timing report for that build supports it.
REFERENCE_CLOCK_MHZ = 100.0


def clock_basis(clock_mhz: float) -> str:
    """"reference" for a clock at or below REFERENCE_CLOCK_MHZ, else "assumed" (no timing analysis
    supports it)."""
    return "reference" if clock_mhz <= REFERENCE_CLOCK_MHZ else "assumed"


def clock_label(clock_mhz: float) -> str:
    """The clock as a figure's label says it: "100 MHz", or "333 MHz (assumed: no timing analysis)"."""
    text = f"{clock_mhz:g} MHz"
    return text if clock_basis(clock_mhz) == "reference" else f"{text} (assumed: no timing analysis)"


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
