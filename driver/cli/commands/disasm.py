"""`vdla disasm FILE`: list a binary instruction stream (16 bytes per instruction), one line each."""
from __future__ import annotations


def add_parser(sub):
    p = sub.add_parser("disasm", help="disassemble a binary VDLA instruction stream")
    p.add_argument("file", help="raw instruction stream (16 bytes per instruction, little-endian)")
    p.add_argument("--config", default=None, help="hardware config (preset or JSON); default pynq")
    return p


def run(args) -> int:
    from vdla.hw import disassemble, load_config
    with open(args.file, "rb") as f:
        data = f.read()
    print(disassemble(load_config(args.config).isa.decode_stream(data)))
    return 0
