"""Instruction semantics and legality are stated once, in vdla.hw; everything else reads them.

A scan of the code (comments and string literals left out) of every package and test outside
vdla_hw for the shapes a restatement takes:

- alu table: branches on (or a table keyed by) four or more ALU opcodes -- the lane
  operations written again (vdla.hw.alu_ops.lane_op);
- shift decode: the SHR operand's low six bits taken by hand (`& 63`; alu_ops.shift_amount);
- shr range: the shift range -32..31 (alu_ops.SHR_MIN, SHR_MAX);
- imm range: the 16-bit immediate's bounds (1 << 15, 2 ** 15, 32767, 32768; alu_ops.IMM_MIN,
  IMM_MAX);
- insn bytes: 16 next to an instruction, stream or address name (isa.INSN_BYTES);
- flag table: a dependence flag and a token queue named together (isa.FLAG_QUEUE), or
  module numbers assigned by hand (isa.Module).

A module that states one of these again on purpose is listed in ALLOWED with the reason.
The reference model's own statements are compared with vdla.hw's at the end.
"""
import io
import tokenize
from pathlib import Path

import pytest

from vdla.hw.isa import DEP_FLAGS, FLAG_QUEUE, TOKEN_QUEUES, Module

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("simulator", "compiler", "driver", "benchmarks", "tests")

ALLOWED = {
    "simulator/reference.py": (
        {"alu table", "shift decode", "shr range", "imm range", "insn bytes", "flag table"},
        "the independent reference model: an oracle written a second time from the SPEC, so that "
        "a mistake in vdla.hw's statement shows up as a disagreement (see its docstring)"),
    "compiler/intrin/vdla.py": (
        {"alu table"},
        "the lane operations as loop-IR expressions, the language tensorize matches in, which "
        "numpy cannot give; tests/compiler/intrin/test_vdla_alu_declarations.py runs them "
        "against vdla.hw's statement"),
}

_ALU_OPS = {"MIN", "MAX", "ADD", "SHR", "MUL"}
_INSN_NAME = ("insn", "instruction", "stream", "addr")
_QUEUES = {f'"{q}"' for q in TOKEN_QUEUES} | {f"'{q}'" for q in TOKEN_QUEUES}
_FLAGS = {f'"{f}"' for f in DEP_FLAGS} | {f"'{f}'" for f in DEP_FLAGS}
_MODULES = {m.name for m in Module}


def logical_lines(source: str):
    """Each logical line of code as its tokens (comments dropped), with its first line number."""
    line = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if line:
                yield line[0].start[0], line
            line = []
        elif tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
            line.append(tok)


def _has(texts: list[str], *sequence: str) -> bool:
    n = len(sequence)
    return any(tuple(texts[k:k + n]) == sequence for k in range(len(texts) - n + 1))


def _insn_bytes(code: list) -> bool:
    """16 within three tokens of an instruction/stream/address name and a * % // operator."""
    for k, tok in enumerate(code):
        if tok.type == tokenize.NUMBER and tok.string == "16":
            near = code[max(0, k - 3):k + 4]
            if (any(t.type == tokenize.NAME and any(key in t.string.lower() for key in _INSN_NAME) for t in near)
                    and any(t.string in ("*", "%", "//") for t in near)):
                return True
    return False


def line_findings(tokens) -> set[str]:
    code = [t for t in tokens if t.type != tokenize.STRING]
    texts = [t.string.lower() for t in code]
    numbers = {t.string.lower() for t in code if t.type == tokenize.NUMBER}
    compares = {"<", "<=", ">", ">="} & set(texts)
    found = set()
    if _insn_bytes(code):
        found.add("insn bytes")
    if _has(texts, "&", "63") or _has(texts, "&", "~", "63") or _has(texts, "&", "0x3f"):
        found.add("shift decode")
    if compares and ((_has(texts, "-", "32") and "31" in numbers) or (_has(texts, "-", "31") and "32" in numbers)):
        found.add("shr range")
    if (_has(texts, "1", "<<", "15") or _has(texts, "2", "**", "15") or _has(texts, "-", "32768")
            or (compares and numbers & {"32767", "32768"})):
        found.add("imm range")
    strings = {t.string for t in tokens if t.type == tokenize.STRING}
    if (strings & _QUEUES and strings & _FLAGS) or (
            _MODULES <= {t.string for t in code} and "=" in texts and numbers >= {"0", "1", "2"}):
        found.add("flag table")
    return found


def alu_table(tokens_by_line) -> bool:
    """Four or more opcodes compared against (== / is) or used as keys (AluOp.X:)."""
    branched = set()
    for _, tokens in tokens_by_line:
        texts = [t.string for t in tokens]
        for k in range(len(texts) - 2):
            if texts[k] == "AluOp" and texts[k + 1] == "." and texts[k + 2] in _ALU_OPS:
                before = texts[k - 1] if k else ""
                after = texts[k + 3] if k + 3 < len(texts) else ""
                if before in ("==", "is") or after == ":":
                    branched.add(texts[k + 2])
    return len(branched) >= 4


def restatements(path: Path) -> dict[str, list[int]]:
    lines = list(logical_lines(path.read_text()))
    found: dict[str, list[int]] = {}
    for number, tokens in lines:
        for kind in line_findings(tokens):
            found.setdefault(kind, []).append(number)
    if alu_table(lines):
        found["alu table"] = [0]
    return found


def scanned_files():
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


def test_no_module_outside_vdla_hw_restates_instruction_semantics_or_legality():
    problems = []
    for path in scanned_files():
        rel = path.relative_to(ROOT).as_posix()
        allowed = ALLOWED.get(rel, (set(), ""))[0]
        for kind, numbers in sorted(restatements(path).items()):
            if kind not in allowed:
                where = "" if numbers == [0] else f" (lines {', '.join(map(str, numbers))})"
                problems.append(f"{rel}: {kind}{where}")
    assert not problems, ("restated outside vdla.hw; read vdla.hw.alu_ops / vdla.hw.isa instead, "
                          "or list the module in ALLOWED with the reason:\n" + "\n".join(problems))


@pytest.mark.parametrize("source,kind", [
    ("if insn_addr % 16:\n    pass\n", "insn bytes"),
    ("end = addr + 16 * count\n", "insn bytes"),
    ("amount = ((b & 63) ^ 32) - 32\n", "shift decode"),
    ("ok = -32 <= imm <= 31\n", "shr range"),
    ("ok = -(1 << 15) <= imm < 1 << 15\n", "imm range"),
    ("imm = rng.integers(-2**15, 2**15)\n", "imm range"),
    ("T = {'pop_prev': 'l2c', 'push_next': 'c2s'}\n", "flag table"),
    ("LOAD, COMPUTE, STORE = 0, 1, 2\n", "flag table"),
])
def test_the_scan_sees_each_shape(tmp_path, source, kind):
    path = tmp_path / "m.py"
    path.write_text(source)
    assert kind in restatements(path)


def test_the_scan_sees_an_alu_table_and_ignores_strings_and_comments(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f(op, a, b):\n"
                    "    if op == AluOp.MIN:\n        return min(a, b)\n"
                    "    if op == AluOp.MAX:\n        return max(a, b)\n"
                    "    if op == AluOp.ADD:\n        return a + b\n"
                    "    if op is AluOp.MUL:\n        return a * b\n")
    assert "alu table" in restatements(path)
    path.write_text('"""16 bytes per instruction, -32..31, & 63"""\nx = 1  # insn_addr % 16\n')
    assert restatements(path) == {}


def test_every_allowed_module_exists_and_still_needs_its_entry():
    for rel, (kinds, reason) in ALLOWED.items():
        assert reason and (ROOT / rel).is_file(), rel
        assert set(restatements(ROOT / rel)) & kinds, f"{rel} no longer restates {kinds}: drop it from ALLOWED"


def test_the_reference_models_flag_table_is_vdla_hws():
    from vdla.simulator.reference import _QUEUE_OF_FLAG
    assert {Module[name.upper()]: table for name, table in _QUEUE_OF_FLAG.items()} == FLAG_QUEUE
