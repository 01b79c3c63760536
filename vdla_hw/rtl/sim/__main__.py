"""`python -m vdla.hw.rtl.sim {lint,build,netlist,package} [--config NAME_OR_JSON]`

lint     Verilator -Wall lint of the whole RTL for the config, the check that no source
         restates a fact of the generated package and that none uses a construct Yosys
         reads differently (exit 1 on any message)
build    build (or find in the cache) the Verilator simulation; prints its directory
netlist  synthesize with Yosys (vdla.hw.synth's flow) and build the netlist's simulation
         (or find it in the cache); prints its directory
package  print the generated vdla_pkg.sv
"""
from __future__ import annotations

import argparse
import sys
import tempfile


def main(argv=None) -> int:
    from vdla.hw import DEFAULT_PRESET, load_config
    parser = argparse.ArgumentParser(prog="python -m vdla.hw.rtl.sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("lint", "build", "netlist", "package"))
    parser.add_argument("--config", default=DEFAULT_PRESET, help="preset name or JSON file (default: %(default)s)")
    args = parser.parse_args(argv)
    from vdla.hw.rtl_params import check_supported
    try:
        config = load_config(args.config)
        check_supported(config)
    except ValueError as exc:   # an unknown preset, a bad JSON file, a config this RTL cannot build
        print(f"{parser.prog}: error: --config: {exc}", file=sys.stderr)
        return 2
    if args.action == "package":
        from vdla.hw.rtl_params import package_text
        print(package_text(config), end="")
        return 0
    from .build import build, lint
    if args.action == "build":
        print(build(config))
        return 0
    if args.action == "netlist":
        from ...synth import SynthError
        from .netlist import build_netlist
        try:
            print(build_netlist(config))
        except SynthError as exc:
            print(f"netlist: {exc}", file=sys.stderr)
            return 1
        return 0
    from .. import RTL_DIR, SOURCES
    from . import facts, yosys_pitfalls
    with tempfile.TemporaryDirectory(prefix="vdla-lint-") as tmp:
        lines = lint(config, tmp)
    sources = [RTL_DIR / name for name in SOURCES]
    lines += facts.check_sources(config, sources) + yosys_pitfalls.check_sources(sources)
    for line in lines:
        print(line)
    print(f"lint of {config.name} ({config.target}), verilator -Wall, restated facts and Yosys pitfalls: "
          + (f"{len(lines)} message(s)" if lines else "clean"))
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
