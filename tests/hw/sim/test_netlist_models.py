"""The cell models of the Yosys netlist's simulation (vdla.hw.rtl.sim.netlist): which block-RAM
settings the model covers and which it refuses by name, and the one models file it assembles
(simlib's word-level cells, cells_sim.v with the block RAMs' behaviour put in). No Yosys run,
no Verilator build: test_netlist.py runs the netlist itself."""
import re

import pytest

from vdla.hw.rtl.sim import netlist
from vdla.hw.synth import SynthError

PINS = ".ADDRARDADDR(a), .RSTRAMARSTRAM(1'h0), .RSTRAMB(1'h0), .WEA(w)"


def bram(kind="RAMB36E1", name="\\u_acc.mem.0.0 ", pins=PINS, **params):
    defaults = {"RAM_MODE": '"SDP"', "READ_WIDTH_A": "32'd72", "WRITE_WIDTH_B": "32'd72", "READ_WIDTH_B": "32'sd0",
                "WRITE_WIDTH_A": "32'sd0", "DOA_REG": "32'sd0", "DOB_REG": "32'sd0",
                "WRITE_MODE_A": '"READ_FIRST"', "WRITE_MODE_B": '"READ_FIRST"',
                "INIT_00": "256'hxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                "INIT_A": "72'h000000000xxxxxxxxx"}
    defaults.update(params)
    body = ",\n".join(f"    .{k}({v})" for k, v in defaults.items())
    return f"  {kind} #(\n{body}\n  ) {name} (\n    {pins}\n  );\n"


def tdp(kind="RAMB36E1", width="32'd36", **params):
    """Port A writes, port B reads (as synth_xilinx maps the 1R1W SRAMs)."""
    ports = {"READ_WIDTH_A": "32'd0", "WRITE_WIDTH_A": width, "READ_WIDTH_B": width, "WRITE_WIDTH_B": "32'd0"}
    return bram(kind, RAM_MODE='"TDP"', **{**ports, **params})


def test_the_modes_synth_xilinx_maps_to_are_covered():
    text = (bram() + bram("RAMB18E1", READ_WIDTH_A="32'd36", WRITE_WIDTH_B="32'd36")
            + "".join(tdp(width=w) for w in ("32'd9", "32'd18", "32'd36")) + tdp("RAMB18E1", "32'd18"))
    assert netlist.check_brams(text) == 6


@pytest.mark.parametrize("text,named", [
    (bram(READ_WIDTH_A="32'd36"), "SDP with READ_WIDTH_A 36"),
    (bram("RAMB18E1"), "SDP with READ_WIDTH_A 72"),
    (tdp(width="32'd72"), "TDP with READ_WIDTH_B 32'd72"),
    (tdp("RAMB18E1", "32'd36"), "TDP with READ_WIDTH_B 32'd36"),
    (tdp(width="32'd4"), "TDP with READ_WIDTH_B 32'd4"),
    (bram(RAM_MODE='"ROM"'), "RAM_MODE ROM"),
    (bram(DOA_REG="32'sd1"), "DOA_REG"),
    (bram(RAM_EXTENSION_A='"UPPER"'), "RAM_EXTENSION_A"),
    (bram(IS_CLKARDCLK_INVERTED="1'b1"), "IS_CLKARDCLK_INVERTED"),
    (bram(INIT_00="256'h00000000000000000000000000000000000000000000000000000000000000ff"), "INIT_00"),
    (bram(pins=".RSTRAMB(rst)"), "RSTRAMB is driven by rst"),
    (tdp(WRITE_WIDTH_B="32'd36", WRITE_MODE_B='"WRITE_FIRST"'), "port B reads and writes"),
])
def test_what_the_model_does_not_cover_is_refused_by_instance(text, named):
    with pytest.raises(SynthError, match=r"block RAM \\u_acc\.mem\.0\.0 \(RAMB\w+\)") as info:
        netlist.check_brams(text)
    assert named in str(info.value)


@pytest.mark.parametrize("text,value", [("32'sd72", 72), ("1'h0", 0), ("4", 4), ("1'b1", 1), ("8'hff", 255),
                                        ("1'hx", None), ("\"TDP\"", None)])
def test_verilog_constants_are_read_as_numbers_or_not_at_all(text, value):
    assert netlist._number(text) == value


def test_the_models_file_holds_each_block_ram_once_with_behaviour():
    models = netlist.cell_models("  \\$alu #(\n    .A_WIDTH(32)\n  ) _1_ (\n    .A(a)\n  );\n")
    for kind in ("RAMB36E1", "RAMB18E1"):
        declared = re.findall(rf"^module {kind}\b.*?^endmodule", models, re.S | re.M)
        assert len(declared) == 1, kind
        assert "vdla_model_bram" in declared[0] and "specify" not in declared[0]
    assert len(re.findall(r"^module \\\$alu\b", models, re.M)) == 1
    assert re.search(r"^module vdla_model_bram\b", models, re.M)
    assert re.search(r"^module DSP48E1\b", models, re.M)


def test_a_cell_simlib_does_not_model_is_named():
    with pytest.raises(SynthError, match=r"\$no_such_cell"):
        netlist.cell_models("  \\$no_such_cell #(\n    .W(1)\n  ) _1_ (\n    .A(a)\n  );\n")
