"""FPGA parts a VDLA instance may be built for, and their resource limits (the vendors' data
sheets: Zynq-7000 DS190; Zynq UltraScale+ DS891; the KV260's K26 SOM DS987, whose xck26 is the
xczu5ev die: 117,120 LUTs, 234,240 flip-flops, 1,248 DSP48E2, 144 RAMB36, 64 URAM288).

`family` says how vdla.hw.synth maps the RTL for a part: "xc7" parts with Yosys's 7-series
flow (every figure of the pynq baseline), "xcup" parts with its UltraScale+ flow (DSP48E2,
RAMB36E2/RAMB18E2, and where the part has UltraRAM, `-uram`: URAM288, 4K x 72 = 288 Kib each).
So the block RAM / UltraRAM split a fit is judged on is Yosys's own mapping (memory_libmap picks
the cheapest tiling of each memory; its URAM288 costs about four RAMB36, so roughly a memory goes
to UltraRAM where a 4K x 72 slice of it would take more than four RAMB36), not Vivado's. fits()
judges the figures as mapped; a config that overflows RAMB36 while UltraRAM is free may fit with
another split (ram_style), which vdla.hw.uram_split models and the DSE's fit check counts.
Figures without a "uram" count come from a mapping without UltraRAM (the 7-series flow) and use
none."""
from __future__ import annotations

RESOURCES = ("lut", "ff", "dsp", "bram36", "uram")

# part -> limits; `family`: the synthesis flow for it; `boards`: where a user meets the part
PARTS = {
    "xc7z010": {"lut": 17600, "ff": 35200, "dsp": 80, "bram36": 60, "uram": 0, "family": "xc7",
                "boards": "Zybo Z7-10"},
    "xc7z020": {"lut": 53200, "ff": 106400, "dsp": 220, "bram36": 140, "uram": 0, "family": "xc7",
                "boards": "PYNQ-Z1, PYNQ-Z2"},
    "xczu3eg": {"lut": 70560, "ff": 141120, "dsp": 360, "bram36": 216, "uram": 0, "family": "xcup",
                "boards": "Ultra96, AUP-ZU3"},
    "xck26": {"lut": 117120, "ff": 234240, "dsp": 1248, "bram36": 144, "uram": 64, "family": "xcup",
              "boards": "Kria KV260 (K26 SOM)"},
    "xczu7ev": {"lut": 230400, "ff": 460800, "dsp": 1728, "bram36": 312, "uram": 96, "family": "xcup",
                "boards": "ZCU104"},
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
    """{lut, ff, dsp, bram36, uram} of a part; ValueError naming the known parts otherwise."""
    if part not in PARTS:
        raise ValueError(f"unknown FPGA part {part!r}; known parts: {', '.join(PARTS)}")
    return {k: PARTS[part][k] for k in RESOURCES}


def family(part: str) -> str:
    """The synthesis flow of a part: "xc7" or "xcup" (see the module docstring)."""
    limits(part)
    return PARTS[part]["family"]


def part_of(device: str) -> str:
    """The PARTS key a Vivado device string names ("xck26-sfvc784-2LV-c" -> "xck26")."""
    found = [part for part in PARTS if device.lower().startswith(part)]
    if not found:
        raise ValueError(f"device {device!r} is none of the known parts: {', '.join(PARTS)}")
    return max(found, key=len)


def fits(figures: dict, part: str = "xc7z020") -> bool:
    """Every resource at or under the part's limit. A figure missing from `figures` is an error,
    except "uram": figures of a mapping without UltraRAM use none."""
    missing = [k for k in RESOURCES if k not in figures and k != "uram"]
    if missing:
        raise ValueError(f"resource figures lack {', '.join(missing)}; expected {', '.join(RESOURCES)}")
    return all(figures.get(k, 0) <= v for k, v in limits(part).items())


def fitting_parts(figures: dict) -> list[str]:
    """The parts (smallest first, as listed in PARTS) whose limits hold the figures."""
    return [part for part in PARTS if fits(figures, part)]
