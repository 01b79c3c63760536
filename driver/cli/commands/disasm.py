"""`vdla disasm FILE`: list a binary instruction stream (16 bytes per instruction), one line each;
or, for a vdla artifact, the streams of its accelerator kernels.

An artifact holds its kernels as programs that the runtime's JIT turns into streams against the
buffers they run on; here each is assembled on a simulator of the artifact's hardware config,
as a run would, and listed under a header naming the kernel, the graph nodes that run it and
its size. --kernel NAME picks one (a program name such as v2_conv, or a node name); --export
DIR writes each as NAME.insn (the raw stream) and NAME.dram (the DRAM image holding its
micro-ops, the stream at the address in DIR/streams.json), which the file forms below read.

`--check vta` checks the stream instead (vdla.simulator.vta_check): one line per place where
VTA's hardware would compute something other than VDLA, exit status 1 if there is any. The
check of reads of never-written SRAM follows the micro-ops, which live in DRAM: pass the
image with --dram, or give FILE as a DRAM image with --insn-addr.
"""
from __future__ import annotations

import sys

from ..options import OptionError


def _address(text: str) -> int:
    return int(text, 0)


def add_parser(sub):
    p = sub.add_parser("disasm", help="disassemble a binary VDLA instruction stream or an artifact's kernels, "
                                      "or check them for VTA")
    p.add_argument("file", help="a vdla artifact, a raw instruction stream (16 bytes per instruction, "
                                "little-endian), or with --insn-addr a DRAM image that holds one")
    p.add_argument("--kernel", metavar="NAME", default=None,
                   help="an artifact's kernel to list: its program (v0_conv, ...) or a graph node that runs it")
    p.add_argument("--export", metavar="DIR", default=None,
                   help="write each of an artifact's kernels as DIR/NAME.insn and DIR/NAME.dram, indexed in "
                        "DIR/streams.json")
    p.add_argument("--config", default=None, help="hardware config (preset or JSON); default pynq")
    p.add_argument("--check", choices=["vta"], default=None,
                   help="vta: list where VTA's hardware would compute something else (exit status 1 if anywhere)")
    p.add_argument("--dram", metavar="IMAGE", default=None,
                   help="DRAM image holding the micro-ops the stream's LOAD UOPs read (for --check)")
    p.add_argument("--insn-addr", type=_address, metavar="ADDR", default=None,
                   help="FILE is a DRAM image and the stream starts at byte ADDR (decimal or 0x...)")
    p.add_argument("--insn-count", type=int, metavar="N", default=None,
                   help="with --insn-addr: instructions in the stream (default: up to the first FINISH)")
    return p


def run(args) -> int:
    import numpy as np

    from vdla.hw import DEFAULT_PRESET, INSN_BYTES, disassemble, load_config
    if _is_artifact(args.file):
        return _artifact(args)
    for flag in ("kernel", "export"):
        if getattr(args, flag) is not None:
            raise OptionError(f"--{flag} reads a vdla artifact; {args.file} is not one (a raw stream or DRAM image)")
    config = load_config(DEFAULT_PRESET if args.config is None else args.config)
    data = np.fromfile(args.file, dtype=np.uint8)
    if args.insn_addr is None and data.size % INSN_BYTES:
        raise OptionError(f"{args.file}: {data.size} bytes is not a whole number of {INSN_BYTES}-byte "
                          "instructions; a DRAM image that holds a stream needs --insn-addr (a vdla artifact "
                          "is recognized by its header)")
    image = None
    if args.insn_addr is not None:
        image, addr = data, args.insn_addr
        if addr < 0 or addr % INSN_BYTES or addr >= image.size:
            raise OptionError(f"--insn-addr {addr:#x}: not a {INSN_BYTES}-byte aligned address inside {args.file} "
                              f"({image.size} bytes)")
        count = args.insn_count if args.insn_count is not None else _count_to_finish(image, addr)
        end = addr + INSN_BYTES * count
        if count <= 0 or end > image.size:
            raise OptionError(f"--insn-addr {addr:#x} --insn-count {count}: the stream would end at byte {end}, "
                              f"outside {args.file} ({image.size} bytes)")
        data = image[addr:end]
    elif args.insn_count is not None:
        raise OptionError("--insn-count needs --insn-addr (FILE is then a DRAM image)")
    if args.dram is not None:
        image = np.fromfile(args.dram, dtype=np.uint8)
    insns = config.isa.decode_stream(data)
    if args.check is None:
        print(disassemble(insns))
        return 0
    return _check_vta(insns, image, config)


def _check_vta(insns, image, config) -> int:
    from vdla.simulator.vta_check import check_vta
    findings = check_vta(insns, image, config)
    if image is None:
        print("note: reads of never-written SRAM were not checked: they follow the micro-ops, which live in "
              "DRAM (pass --dram IMAGE, or FILE as a DRAM image with --insn-addr)", file=sys.stderr)
    for f in findings:
        print(f)
    if not findings:
        print(f"VTA-compatible: {len(insns)} instructions, no findings")
    return 1 if findings else 0


def _count_to_finish(image, addr: int) -> int:
    """Instructions from byte `addr` up to and including the first FINISH."""
    from vdla.hw import INSN_BYTES, Opcode
    opcodes = image[addr::INSN_BYTES][: max(0, (image.size - addr) // INSN_BYTES)] & 7   # bits [2:0]
    hits = (opcodes == Opcode.FINISH).nonzero()[0]
    if not hits.size:
        raise OptionError(f"no FINISH after byte 0x{addr:x} of the image; give --insn-count")
    return int(hits[0]) + 1


def _is_artifact(path) -> bool:
    from vdla.driver.artifact import MAGIC
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def _artifact(args) -> int:
    """The artifact's kernels: listed, checked for VTA or exported (see the module docstring)."""
    import json
    import os

    from vdla.driver.artifact import load
    from vdla.driver.artifact_disasm import kernel_streams
    from vdla.hw import disassemble
    for flag in ("insn_addr", "insn_count", "dram", "config"):
        if getattr(args, flag) is not None:
            raise OptionError(f"--{flag.replace('_', '-')} is for raw streams and DRAM images; an artifact's "
                              "kernels are assembled for the hardware config it was compiled for")
    streams = kernel_streams(load(args.file), args.kernel)
    if args.export is not None:
        os.makedirs(args.export, exist_ok=True)
        index = {}
        for k in streams:
            k.dram.tofile(os.path.join(args.export, f"{k.name}.dram"))
            k.words.tofile(os.path.join(args.export, f"{k.name}.insn"))
            index[k.name] = {"nodes": k.nodes, "instructions": len(k.insns), "insn_addr": k.insn_addr,
                             "config": k.config.name}
        with open(os.path.join(args.export, "streams.json"), "w") as f:
            json.dump(index, f, indent=1)
        print(f"{len(streams)} kernel stream(s) written to {args.export} (NAME.insn, NAME.dram, streams.json)")
        return 0
    status = 0
    for k in streams:
        print(f"# {k.name}: {len(k.insns)} instructions, {k.uop_bytes} bytes of micro-ops; runs "
              f"{', '.join(k.nodes)} ({k.config.name})")
        if args.check is None:
            print(disassemble(k.insns))
        else:
            status |= _check_vta(k.insns, k.dram, k.config)
    return status
