"""The RTL reads every hardware fact from the package vdla.hw.rtl_params generates, and that
package states the ISA and the register block exactly as vdla.hw defines them.

The restatement check (vdla.hw.rtl.sim.facts) is a text check; each rule is proven here on
a planted violation, in a small string and in a copy of a real source."""
import re

import pytest

from vdla.hw import load_config, regmap, rtl_params
from vdla.hw.isa import INSN_BITS, UOP_BITS, AluOp, MemType, Opcode
from vdla.hw.rtl import RTL_DIR, SOURCES
from vdla.hw.rtl.sim.facts import check_sources, restatements

# a config whose GEMM/ALU fields sit elsewhere than the default's (other depths) on a wider bus
OTHER = {"LOG_BATCH": 1, "LOG_BLOCK": 3, "LOG_UOP_BUFF_SIZE": 11, "LOG_INP_BUFF_SIZE": 13,
         "LOG_WGT_BUFF_SIZE": 14, "LOG_ACC_BUFF_SIZE": 16, "bus_width_bits": 128}
CONFIGS = {"pynq": "pynq", "ultra96": "ultra96", "other": OTHER}


def _package(name):
    return rtl_params.package_text(load_config(CONFIGS[name]))


def _rules(messages):
    return {re.search(r"\[([\w-]+)\]", m).group(1) for m in messages}


# ---- the sources ----------------------------------------------------------------------------
def test_no_rtl_source_restates_a_fact():
    sources = [RTL_DIR / name for name in SOURCES]
    assert sorted(p.name for p in RTL_DIR.glob("*.sv")) == sorted(SOURCES), "a source is not in SOURCES"
    assert check_sources(load_config("pynq"), sources) == []


@pytest.mark.parametrize("rule,text", [
    ("insn-slice", "assign opcode = q_insn[2:0];"),
    ("insn-slice", "assign flag = q_insn[3];"),
    ("insn-slice", "assign n = insn[MEM_X_SIZE_LSB +: 16];"),
    ("insn-slice", "assign d = q_insn.mem[10:7];"),
    ("insn-slice", "assign u = uop_rdata[10:0];"),
    ("insn-width", "input logic [127:0] insn,"),
    ("insn-width", "vdla_cmd_fifo #(.WIDTH(128)) u_q ();"),
    ("redeclared", "localparam logic [2:0] MIN = 3'd0, MAX = 3'd1;"),
    ("redeclared", "localparam logic [2:0] OP_GEMM = 3'd2;"),
    ("redeclared", "localparam int ACC_DEPTH = 2048;"),
    ("redeclared", "typedef enum logic [2:0] {LOAD, STORE, GEMM} opcode_t;"),
    ("literal-opcode", "assign is_gemm = opcode == 3'd2;"),
    ("literal-opcode", "assign is_out = 3'b100 != q_insn.mem.memory_type;"),
    ("literal-opcode", "always_comb case (op) 3'd0: y = a; default: y = b; endcase"),
])
def test_each_rule_catches_its_restatement(rule, text):
    messages = restatements(f"module m;\n  {text}\nendmodule\n", "bad.sv", _package("pynq"))
    assert _rules(messages) == {rule}, messages
    assert messages[0].startswith("bad.sv:2: ")


def test_what_the_rules_allow():
    good = """
      // q_insn[2:0] in a comment is no restatement
      input vdla_pkg::insn_t q_insn,
      assign opcode = q_insn.hdr.opcode;
      assign w = insn[ALU_IMM_LSB +: ALU_IMM_W];
      assign lo = insn[GEMM_UOP_END_W-1:0];
      assign is_gemm = opcode == OP_GEMM;
      localparam int IX_DST = 0, LANES = BATCH * BLOCK;
      typedef enum logic [1:0] {S_IDLE, S_BUSY} state_t;
      always_comb case (op) ALU_MIN: y = a; default: y = b; endcase
    """
    assert restatements(good, "good.sv", _package("pynq")) == []


@pytest.mark.parametrize("source,old,new,rule", [
    ("vdla_compute.sv", "assign opcode = q_insn.hdr.opcode;", "assign opcode = q_insn[2:0];", "insn-slice"),
    ("vdla_dma_wr.sv", "y_size <= insn.y_size;", "y_size <= insn[MEM_Y_SIZE_LSB +: 16];", "insn-slice"),
    ("vdla_fetch.sv", "logic [INSN_WIDTH-1:0] burst_buf [FETCH_BURST_INSNS];",
     "logic [127:0] burst_buf [FETCH_BURST_INSNS];", "insn-width"),
    ("vdla_alu_lane.sv", "  logic signed [ACC_BITS-1:0] sa, sb;",
     "  localparam logic [2:0] MIN = 3'd0;\n  logic signed [ACC_BITS-1:0] sa, sb;", "redeclared"),
    ("vdla_compute.sv", "assign is_alu = opcode == OP_ALU;", "assign is_alu = opcode == 3'd4;", "literal-opcode"),
])
def test_a_violation_planted_in_a_real_source_is_found(source, old, new, rule):
    text = (RTL_DIR / source).read_text()
    assert old in text, f"{source} changed: update the planted violation"
    messages = restatements(text.replace(old, new, 1), source, _package("pynq"))
    assert _rules(messages) == {rule}, messages


# ---- the package ----------------------------------------------------------------------------
def _struct_layout(package: str, type_name: str) -> dict[str, tuple[int, int]]:
    """{member: (lsb, width)} of a generated packed struct (members are listed MSB first)."""
    body = re.search(r"typedef struct packed \{[^\n]*\n([^{}]*)\} " + type_name + ";", package).group(1)
    types = {name: int(msb) for msb, name in re.findall(r"typedef enum logic \[(\d+):0\] \{[^}]*\} (\w+);", package)}
    members = []
    for line in body.strip().splitlines():
        m = re.fullmatch(r"\s*(?:logic(?: \[(\d+):0\])?|(\w+)) (\w+);", line)
        width = types[m.group(2)] + 1 if m.group(2) else int(m.group(1) or 0) + 1
        members.append((m.group(3), width))
    layout, lsb = {}, 0
    for name, width in reversed(members):
        layout[name] = (lsb, width)
        lsb += width
    return layout


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_structs_are_the_encoding(name):
    config, package = load_config(CONFIGS[name]), _package(name)
    isa = config.isa
    for type_name, fields, total in (("insn_hdr_t", isa.finish, INSN_BITS), ("mem_insn_t", isa.mem, INSN_BITS),
                                     ("gemm_insn_t", isa.gemm, INSN_BITS), ("alu_insn_t", isa.alu, INSN_BITS),
                                     ("uop_t", isa.uop, UOP_BITS)):
        layout = _struct_layout(package, type_name)
        assert sum(w for _, w in layout.values()) == total, type_name
        fields_only = {k: v for k, v in layout.items() if not k.startswith("unused_")}
        assert fields_only == {f.name: (f.lsb, f.width) for f in fields}, type_name
        for f in fields:   # the localparams say the same
            prefix = {"insn_hdr_t": "HDR", "uop_t": "UOP"}.get(type_name, type_name.split("_")[0].upper())
            assert f"localparam int {prefix}_{f.name.upper()}_LSB = {f.lsb};" in package
            assert f"localparam int {prefix}_{f.name.upper()}_W = {f.width};" in package


def test_the_enums_and_register_facts_come_from_vdla_hw():
    package = _package("pynq")
    for enum, prefix in ((Opcode, "OP"), (MemType, "MEM"), (AluOp, "ALU")):
        for member in enum:
            assert f"{prefix}_{member.name} = 3'd{int(member)}" in package
    for name, mask in regmap.CONTROL_BITS.items():
        assert f"localparam int CTRL_{name}_BIT = {mask.bit_length() - 1};" in package
    for k, name in enumerate(regmap.COUNTERS):
        assert f"localparam int CNT_{name} = {k};" in package
    for r in regmap.REGISTERS:
        assert f"REG_{r.name} = {regmap.ADDR_BITS}'h{r.offset:02x};" in package
    assert f"localparam int ERR_W = {max(regmap.ERROR_CAUSES).bit_length()};" in package
    assert f"localparam int INSN_WIDTH = {INSN_BITS};" in package


def test_a_config_change_reaches_the_package():
    default, other = _package("pynq"), _package("other")
    changed = {line.split("=")[0] for line in set(default.splitlines()) ^ set(other.splitlines())
               if "localparam int" in line}
    for name in ("BUS_BITS", "INSN_BEATS", "BLOCK", "LOG_ACC_DEPTH", "GEMM_SRC_FACTOR_IN_LSB", "UOP_WGT_LSB"):
        assert f"  localparam int {name} " in changed, name


def test_the_bundle_macros_follow_the_tables():
    package = _package("pynq")
    for stem, (signals, role) in rtl_params.BUNDLES.items():
        ports = re.search(rf"`define VDLA_{stem}_PORTS\(p\) \\\n(.*?)\n`define", package, re.S).group(1)
        assert len(ports.splitlines()) == len(signals), stem
        for (name, _, by_master, _), line in zip(signals, ports.splitlines()):
            direction = "output" if by_master == (role == "master") else "input"
            assert line.split()[0] == direction and f"p``_{name}," in line, (stem, line)
