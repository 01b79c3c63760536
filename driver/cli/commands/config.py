"""`vdla config [NAME|FILE]`: show a hardware configuration and everything derived from it."""
from __future__ import annotations

import json


def add_parser(sub):
    p = sub.add_parser("config", help="show a hardware configuration (preset name or JSON file)")
    p.add_argument("source", nargs="?", default=None,
                   help="preset (pynq, ultra96, zcu104, kv260, aup_zu3) or JSON file")
    p.add_argument("--json", action="store_true", help="print the full configuration as JSON")
    return p


def run(args) -> int:
    from vdla.hw import DEFAULT_PRESET, load_config
    from vdla.hw.parts import clock_label
    c = load_config(DEFAULT_PRESET if args.source is None else args.source)
    if args.json:
        print(json.dumps({**c.to_dict(), "name": c.name, "hash": c.hash}, indent=2))
        return 0
    print(f"{c.target}: {c.name}  (hash {c.hash[:16]}, id register 0x{c.hash32:08x})")
    print(f"  GEMM {c.batch}x{c.block}x{c.block} int8 -> int32, {c.gemm_macs_per_cycle} MAC/cycle, "
          f"{c.peak_gops:.1f} GOPS peak at {clock_label(c.clock_mhz)}, {c.bus_width_bits}-bit AXI")
    for name in ("inp", "wgt", "acc", "out", "uop"):
        depth = getattr(c, f"{name}_depth")
        elem = getattr(c, f"{name}_elem_bytes")
        print(f"  {name.upper():<4} SRAM {depth:>6} x {elem:>3} B = {depth * elem // 1024:>4} KiB")
    print("  timing: " + ", ".join(f"{k}={v}" for k, v in c.timing.to_dict().items()))
    return 0
