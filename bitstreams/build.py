"""Build a VDLA bitstream for a board: `python -m vdla.bitstreams.build pynq [--prepare-only]`
(in a checkout also `python bitstreams/build.py pynq`).

1. Prepares build/bitstreams/<board>/ (under the current folder): the RTL package generated
   for the board's hardware config, the RTL sources, the board wrapper
   (vdla.hw.board_wrapper), params.tcl from the board manifest (bitstreams/<board>.json),
   vdla_id.xdc (the bitstream's USERID = the config hash's 32-bit ID, the value of the
   hardware ID register) and sources.txt.
2. Runs Vivado in batch mode on vivado_build.tcl (unless --prepare-only, or when no
   `vivado` is on PATH: then it says what to run, and without --prepare-only exits with
   status 3, since nothing was built).
3. Copies the .bit/.hwh next to the manifest and records the bitstream's SHA-256 and the
   config hash in it, which the PYNQ device checks before programming the board.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# vdla.hw.parts' synthesis family of the manifest's part -> the PS the block design instantiates
PS_FAMILIES = {"xc7": "zynq", "xcup": "zynqmp"}


def prepare(board: str, out: Path) -> Path:
    from vdla.driver.board import load_manifest
    from vdla.hw import parts
    from vdla.hw.board_wrapper import write_wrapper
    from vdla.hw.rtl import source_files

    manifest = load_manifest(board)
    config = manifest.hw_config()
    try:
        family = PS_FAMILIES[parts.family(parts.part_of(manifest.part))]
    except ValueError as exc:
        raise SystemExit(f"board {board}: part {manifest.part} is not a Zynq-7000 or Zynq UltraScale+ part "
                         f"vdla.hw.parts knows ({exc})") from None
    out.mkdir(parents=True, exist_ok=True)
    sources = [str(p) for p in source_files(config, out)] + [write_wrapper(config, out, manifest.coherent)]
    (out / "sources.txt").write_text("\n".join(sources) + "\n")
    # The .bit header then names the ISA instance before the bitstream is loaded (vdla.driver.bitfile).
    (out / "vdla_id.xdc").write_text(f"set_property BITSTREAM.CONFIG.USERID 0x{config.hash32:08X} [current_design]\n")
    (out / "params.tcl").write_text("\n".join([
        f"set board {manifest.board}", f"set part {manifest.part}", f"set family {family}",
        f"set clock_mhz {manifest.clock_mhz}", f"set control_base 0x{manifest.control_base:08X}",
        f"set dram_bits {config.bus_width_bits}", ""]))
    return out


def record(board: str, out: Path) -> None:
    from vdla.driver.board import MANIFEST_DIR, config_source
    from vdla.hw import load_config
    path = MANIFEST_DIR / f"{board}.json"
    doc = json.loads(path.read_text())
    for suffix in ("bit", "hwh"):
        shutil.copy(out / f"vdla_{board}.{suffix}", MANIFEST_DIR / doc[suffix if suffix == "hwh" else "bitstream"])
    doc["sha256"] = hashlib.sha256((out / f"vdla_{board}.bit").read_bytes()).hexdigest()
    doc["config_hash"] = load_config(config_source(doc["config"], path.parent)).hash
    path.write_text(json.dumps(doc, indent=2) + "\n")


NOT_BUILT = 3      # the exit status when the build folder was prepared but Vivado could not run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("board", help="a board manifest in bitstreams/ (pynq, ultra96, zcu104, kv260, aup_zu3)")
    parser.add_argument("--out", type=Path, default=None,
                        help="build folder (default build/bitstreams/BOARD under the current folder)")
    parser.add_argument("--prepare-only", action="store_true", help="write the build folder, do not run Vivado")
    parser.add_argument("--record", action="store_true",
                        help="after a Vivado run made by hand: copy .bit/.hwh here and record the hash")
    args = parser.parse_args(argv)
    out = args.out or Path.cwd() / "build" / "bitstreams" / args.board
    if args.record:
        record(args.board, out)
        return 0
    out = prepare(args.board, out)
    command = ["vivado", "-mode", "batch", "-source", str(HERE / "vivado_build.tcl"), "-tclargs", str(out)]
    if args.prepare_only or shutil.which("vivado") is None:
        why = "--prepare-only" if args.prepare_only else "no vivado on PATH: no bitstream was built"
        print(f"prepared {out} ({why}); to build the bitstream run:\n  {' '.join(command)}\n"
              f"then: python -m vdla.bitstreams.build {args.board} --out {out} --record",
              file=sys.stdout if args.prepare_only else sys.stderr)
        return 0 if args.prepare_only else NOT_BUILT
    subprocess.run(command, check=True, cwd=out)
    record(args.board, out)
    print(f"built {out / f'vdla_{args.board}.bit'}; manifest bitstreams/{args.board}.json updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
