"""The UltraRAM split a fit may count on (vdla.hw.uram_split), against figures worked by hand
from the block RAM and UltraRAM geometry (UG573: RAMB36 512x72 ... 32Kx1, RAMB18 half of one,
URAM288 4K x 72)."""
import pytest

from vdla.hw import load_config
from vdla.hw.uram_split import bram36_cost, fitting_parts, split, srams, uram_cost

# the KV260 DSE's 1x32 point as Yosys mapped it for the xck26: all memory in 173 RAMB36
BLOCK_32 = {**load_config("kv260").to_dict(), "LOG_BLOCK": 5}
FIGURES_32 = {"lut": 64589, "ff": 21768, "dsp": 608, "bram36": 173.0, "uram": 0}


@pytest.mark.parametrize("width, depth, bram36, uram", [
    (72, 8192, 16, 2),          # 8192 * 72 bits = 16 x 36 Kib exactly; two 4K-deep URAMs
    (8192, 256, 114, 114),      # a BLOCK 32 weight row: 114 x 72 bits wide, one RAMB36 / URAM deep
    (1024, 1024, 28.5, 15),     # 57 RAMB18 as 1K x 18; 15 URAM288 wide
    (256, 1024, 7.5, 4),
    (32, 2048, 2, 1),           # a micro-op bank: 2K x 18 twice
])
def test_costs_by_hand(width, depth, bram36, uram):
    assert bram36_cost(width, depth) == bram36 and uram_cost(width, depth) == uram


def test_the_srams_of_a_block_32_config():
    # 128-bit bus: 4 micro-ops a beat, 8192 of them (32 KiB of 4-byte micro-ops) in 4 banks;
    # wgt 32x32 int8 = 8192 bits, 256 KiB / 1 KiB; acc 32 x int32 = 1024 bits, 128 KiB / 128 B;
    # inp and out 32 x int8 = 256 bits, 32 KiB / 32 B and the acc depth
    assert srams(load_config(BLOCK_32)) == [("uop0", 32, 2048), ("uop1", 32, 2048), ("uop2", 32, 2048),
                                            ("uop3", 32, 2048), ("inp", 256, 1024), ("wgt", 8192, 256),
                                            ("acc", 1024, 1024), ("out", 256, 1024)]


def test_block_32_fits_the_kv260_once_the_microop_banks_and_acc_move():
    # most RAMB36 freed per URAM first: uop banks (2/1), acc (28.5/15), inp and out (7.5/4), wgt (1):
    # 173 - 4 x 2 = 165 > 144, then - 28.5 = 136.5 <= 144; URAM 4 x 1 + 15 = 19 <= 64
    assert split(FIGURES_32, "xck26", load_config(BLOCK_32)) == {
        "bram36": 136.5, "uram": 19, "moved": ["uop0", "uop1", "uop2", "uop3", "acc"]}
    assert fitting_parts(FIGURES_32, load_config(BLOCK_32)) == ["xck26", "xczu7ev"]


def test_no_split_where_it_cannot_or_need_not_help():
    config = load_config(BLOCK_32)
    assert split({**FIGURES_32, "dsp": 100, "bram36": 250}, "xczu3eg", config) is None   # 250 > 216, no URAM
    assert split({**FIGURES_32, "uram": 1}, "xck26", config) is None   # Yosys chose a split already
    # every SRAM moved frees 4 x 2 + 7.5 + 114 + 28.5 + 7.5 = 165.5 RAMB36: 323 - 165.5 = 157.5 > 144
    assert split({**FIGURES_32, "bram36": 323}, "xck26", config) is None
    pynq = load_config("pynq")
    as_mapped = {"lut": 26350, "ff": 8468, "dsp": 176, "bram36": 113.0, "uram": 0}
    assert split(as_mapped, "xck26", pynq) == {"bram36": 113.0, "uram": 0, "moved": []}
