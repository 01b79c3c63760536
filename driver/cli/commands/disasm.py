"""`vdla disasm FILE`: list a binary instruction stream (16 bytes per instruction), one line each.

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
    p = sub.add_parser("disasm", help="disassemble a binary VDLA instruction stream, or check it for VTA")
    p.add_argument("file", help="raw instruction stream (16 bytes per instruction, little-endian), or with "
                                "--insn-addr a DRAM image that holds one")
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
    config = load_config(DEFAULT_PRESET if args.config is None else args.config)
    data = np.fromfile(args.file, dtype=np.uint8)
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
