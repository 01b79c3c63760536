"""Hardware facts restated in the RTL sources instead of read from the generated package.

The RTL learns every fact from `vdla_pkg` (vdla.hw.rtl_params). This check reads the
sources as text (comments removed) and names each place that states one again:

* `insn-slice`: an instruction or micro-op word sliced by literal bit numbers
  (`q_insn[2:0]`, `insn[MEM_X_SIZE_LSB +: 16]`) instead of through the package's structs or
  `*_LSB` / `*_W` parameters; the `[N-1:0]` idiom is not a literal bit number;
* `insn-width`: the instruction width written as a number (`[127:0]`, `WIDTH(128)`);
* `redeclared`: a parameter, localparam or enum member named like a package name or an
  ISA enum member (`localparam MIN = 3'd0`, `OP_LOAD`, `LOAD`);
* `literal-opcode`: an opcode, memory type or ALU opcode compared with a number, or a
  case on one of them with numeric items.

It is a text check, not a parser: it catches the ways facts were restated in this RTL so far,
and tests/hw_unit/test_rtl_facts.py plants each kind to prove it still does.
"""
from __future__ import annotations

import re
from pathlib import Path

from ... import rtl_params
from ...isa import INSN_BITS, AluOp, MemType, Opcode

ENUM_MEMBERS = {m.name for enum in (Opcode, MemType, AluOp) for m in enum}
# names of the decoded enum fields, as the RTL's signals and struct members call them
_ENUM_SIGNALS = r"(?:opcode|op|mtype|memory_type|alu_opcode)"

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_WORD_SELECT = re.compile(r"\b(\w*(?:insn|uop_rdata)\w*(?:\.\w+)*)\s*\[([^\]]*)\]")
_FULL_RANGE = re.compile(r"[-+]\s*1\b|:\s*0\s*$")   # [N-1:0], [N+1...]: not bit numbers
_NUMBER = re.compile(r"(?<![\w'])\d+")
_DECLARATION = re.compile(r"\b(?:localparam|parameter)\b([^;()]*(?:\([^;]*?\))?[^;]*);")
_DECLARED_NAME = re.compile(r"(\w+)\s*=(?!=)")
_ENUM_BODY = re.compile(r"\benum\b[^{;]*\{([^}]*)\}")
_LITERAL = r"(?<![\w'])(?:\d[\w']*|'[bdhBDH]\w+)"
_COMPARE = re.compile(rf"\b{_ENUM_SIGNALS}\s*[!=]=\s*{_LITERAL}|{_LITERAL}\s*[!=]=\s*(?:\w+\.)*{_ENUM_SIGNALS}\b")
_CASE = re.compile(rf"\bcase\s*\(\s*(?:\w+\.)*{_ENUM_SIGNALS}\s*\)(.*?)\bendcase\b", re.S)
_NUMERIC_ITEM = re.compile(r"^\s*\d[\w']*\s*(?:,|:)", re.M)


def _strip_comments(text: str) -> str:
    # keep line numbers: a block comment becomes as many newlines as it spanned
    return _COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def package_names(package: str) -> set[str]:
    """Every name the generated package declares: parameters, types, enum members."""
    text = _strip_comments(package)
    names = set()
    for decl in _DECLARATION.finditer(text):
        names |= set(_DECLARED_NAME.findall(decl.group(1)))
    for body in _ENUM_BODY.finditer(text):
        names |= {m.split("=")[0].strip() for m in body.group(1).split(",")}
    names |= set(re.findall(r"\}\s*(\w+)\s*;", text))   # typedef struct/union/enum names
    return names


def restatements(text: str, filename: str, package: str) -> list[str]:
    """`file:line: [rule] message` for every restated fact in one SystemVerilog source."""
    src = _strip_comments(text)
    found = []

    def report(pos: int, rule: str, message: str) -> None:
        found.append((_line(src, pos), f"{filename}:{_line(src, pos)}: [{rule}] {message}"))

    for m in _WORD_SELECT.finditer(src):
        select = _FULL_RANGE.sub("", m.group(2))
        if _NUMBER.search(select):
            report(m.start(), "insn-slice",
                   f"{m.group(1)}[{m.group(2).strip()}] slices an instruction or micro-op word by literal bit "
                   "numbers; read the field through vdla_pkg's struct (insn_t, uop_t) or its *_LSB/*_W parameters")
    for m in re.finditer(rf"\b(?:{INSN_BITS}|{INSN_BITS - 1})\b", src):
        report(m.start(), "insn-width",
               f"the instruction width is written as {m.group(0)}; use INSN_WIDTH or vdla_pkg::insn_t")
    declared = package_names(package) | ENUM_MEMBERS
    for decl in _DECLARATION.finditer(src):
        for name in _DECLARED_NAME.findall(decl.group(1)):
            if name in declared:
                report(decl.start(), "redeclared",
                       f"{name} is declared again; vdla_pkg states it (generated from vdla.hw)")
    for body in _ENUM_BODY.finditer(src):
        for member in body.group(1).split(","):
            name = member.split("=")[0].strip()
            if name in declared:
                report(body.start(), "redeclared",
                       f"enum member {name} restates an ISA constant; use vdla_pkg's enums")
    for m in _COMPARE.finditer(src):
        report(m.start(), "literal-opcode",
               f"'{m.group(0)}' compares an opcode, memory type or ALU opcode with a number; "
               "use vdla_pkg's OP_*, MEM_*, ALU_* constants")
    for case in _CASE.finditer(src):
        for item in _NUMERIC_ITEM.finditer(case.group(1)):
            report(case.start(1) + item.start(), "literal-opcode",
                   "a case on an opcode, memory type or ALU opcode has a numeric item; "
                   "use vdla_pkg's OP_*, MEM_*, ALU_* constants")
    return [message for _, message in sorted(found)]


def check_sources(config, sources: list[Path]) -> list[str]:
    """Restated facts in the given RTL sources (the generated package itself is skipped)."""
    package = rtl_params.package_text(config)
    out = []
    for path in sources:
        if path.name == rtl_params.PACKAGE_FILE:
            continue
        out += restatements(path.read_text(), path.name, package)
    return out
