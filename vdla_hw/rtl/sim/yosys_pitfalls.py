"""SystemVerilog that Yosys 0.70 elaborates differently from Verilator, found in the sources.

The resource figures come from Yosys; the behaviour the tests check comes from Verilator. A
construct the two read differently gives a netlist that is not the tested design, without a
word from either tool. Each rule here is one such construct, found by simulating the Yosys
netlist against the simulator (vdla.hw.rtl.sim.netlist; rtl/README.md, "Yosys pitfalls"):

* `unary-cast`: a unary operator right before a size cast, `~32'(x)`, `-W'(x)`, `!8'(x)`,
  `&8'(x)`. Yosys applies the operator to the size, not to the cast: `~32'(7)` is a cast
  of 7 to ~32 bits, which it folds to 32'd7 (`b | -32'(1)` to `b | 1`): the operator is
  lost, silently, when x is a constant; with a signal Yosys stops with "Static cast with
  zero or negative size". Write `~(32'(x))`. (A unary + is harmless; `-`, `&`, `|`, `^`
  after an operand are the binary operators, which Yosys reads right.)

Like vdla.hw.rtl.sim.facts it reads the text (comments removed), not a parse tree;
tests/hw_unit/test_yosys_pitfalls.py plants each rule.
"""
from __future__ import annotations

import re
from pathlib import Path

from .facts import _line, _strip_comments

# an operator, then a size cast: N'(, NAME'(, (expr)'(
_BEFORE_CAST = re.compile(r"(?P<op>~[&|^]?|!|[-&|^])\s*(?P<size>\d+|[A-Za-z_]\w*|\([^()]*\))\s*'\(")
# what can end an operand: then -, +, &, |, ^ are binary operators
_OPERAND_END = re.compile(r"(?:[\w)\]}'\"]|\$\w+)\s*$")
_KEYWORD_END = re.compile(r"\b(?:return|assign|begin|else)\s*$")


def _unary(src: str, start: int, op: str) -> bool:
    if op.startswith("~") or op == "!":
        return not (op == "~" and src[:start].rstrip().endswith("^"))   # ^~ is binary XNOR
    before = src[:start]
    return not _OPERAND_END.search(before) or bool(_KEYWORD_END.search(before))


def pitfalls(text: str, filename: str) -> list[str]:
    """`file:line: [rule] message` for every Yosys pitfall in one SystemVerilog source."""
    src = _strip_comments(text)
    found = []
    for m in _BEFORE_CAST.finditer(src):
        if _unary(src, m.start(), m.group("op")):
            cast = f"{m.group('size')}'(...)"
            found.append(f"{filename}:{_line(src, m.start())}: [unary-cast] '{m.group('op')}{cast}': Yosys 0.70 "
                         f"applies the unary {m.group('op')} to the size {m.group('size')}, not to the cast "
                         f"(a wrong netlist or an error); write {m.group('op')}({cast})")
    return found


def check_sources(sources: list[Path]) -> list[str]:
    """Yosys pitfalls in the given RTL sources."""
    out = []
    for path in sources:
        out += pitfalls(path.read_text(), path.name)
    return out
