"""The UltraRAM split a fit may count on, where Yosys's mapping leaves UltraRAM unused.

Yosys's `-uram` mapping (vdla.hw.synth.flow) puts a memory in URAM288 only where its own cost
model says so, and for the accelerator's SRAMs behind a 128-bit bus it chooses none (the KV260
DSE: 0 URAM288 for every point, a 1x32 config over the xck26's 144 RAMB36 while its 64 URAM288
sit idle). Vivado places a memory in UltraRAM when told to (ram_style = "ultra"), so the fit of
a part with UltraRAM also accepts a split Yosys did not choose. What is modelled, exactly:

- only figures where Yosys put no memory in UltraRAM (uram 0: every memory is in its RAMB36
  count), and only the five SRAMs of vdla_top may move: the micro-op banks, inp, wgt, acc and
  out, WIDTH x DEPTH from the config as vdla_top instantiates them (vdla.hw.rtl_params);
- a moved memory frees the fewest RAMB36 its shape needs: the best of the RAMB36 (512x72 ...
  32Kx1) and RAMB18 (512x36 ... 16Kx1, half a RAMB36 each) aspect ratios (UG573), and takes
  ceil(WIDTH / 72) x ceil(DEPTH / 4096) URAM288 (4K x 72 each);
- memories move most-RAMB36-freed-per-URAM288 first (the sweep's order on a tie) until the
  block RAM fits; the split fits when block RAM and UltraRAM then both hold. LUT, FF and DSP
  stay Yosys's figures.

A memory Yosys tiled less tightly than the best aspect keeps the difference in the RAMB36 left,
so the model frees no more block RAM than a memory can hold."""
from __future__ import annotations

import math

from .parts import PARTS, fits, limits

URAM_WIDTH, URAM_DEPTH = 72, 4096
# (width, depth, RAMB36 each) of the block RAM aspect ratios in simple dual-port use
BRAM_ASPECTS = ((72, 512, 1.0), (36, 1024, 1.0), (18, 2048, 1.0), (9, 4096, 1.0), (4, 8192, 1.0),
                (2, 16384, 1.0), (1, 32768, 1.0),
                (36, 512, 0.5), (18, 1024, 0.5), (9, 2048, 0.5), (4, 4096, 0.5), (2, 8192, 0.5), (1, 16384, 0.5))


def bram36_cost(width: int, depth: int) -> float:
    """The fewest RAMB36 (RAMB18 counting half) a width x depth memory needs."""
    return min(math.ceil(width / w) * math.ceil(depth / d) * each for w, d, each in BRAM_ASPECTS)


def uram_cost(width: int, depth: int) -> int:
    return math.ceil(width / URAM_WIDTH) * math.ceil(depth / URAM_DEPTH)


def srams(config) -> list[tuple[str, int, int]]:
    """(name, width bits, depth) of each SRAM vdla_top instantiates (one row per micro-op bank)."""
    from .rtl_params import localparams
    p = localparams(config)
    banks = [(f"uop{b}", p["UOP_WIDTH"], p["UOP_DEPTH"] // p["UOPS_PER_BEAT"]) for b in range(p["UOPS_PER_BEAT"])]
    return banks + [(name.lower(), p[f"{name}_ELEM_BITS"], p[f"{name}_DEPTH"]) for name in ("INP", "WGT", "ACC", "OUT")]


def split(figures: dict, part: str, config) -> dict | None:
    """{bram36, uram, moved} of the split that fits the part: as Yosys mapped it (moved empty), or
    with SRAMs moved to UltraRAM as the module docstring says; None when neither fits."""
    if fits(figures, part):
        return {"bram36": figures["bram36"], "uram": figures.get("uram", 0), "moved": []}
    cap = limits(part)
    if figures.get("uram", 0) or not cap["uram"]:
        return None
    costs = [(name, bram36_cost(w, d), uram_cost(w, d)) for name, w, d in srams(config)]
    costs.sort(key=lambda c: -c[1] / c[2])
    bram36, uram, moved = figures["bram36"], 0, []
    for name, freed, taken in costs:
        if bram36 <= cap["bram36"]:
            break
        bram36, uram, moved = bram36 - freed, uram + taken, moved + [name]
    split_figures = {**figures, "bram36": bram36, "uram": uram}
    return {"bram36": bram36, "uram": uram, "moved": moved} if fits(split_figures, part) else None


def fitting_parts(figures: dict, config) -> list[str]:
    """vdla.hw.parts.fitting_parts, each part also allowed its UltraRAM split (split())."""
    return [part for part in PARTS if split(figures, part, config) is not None]
