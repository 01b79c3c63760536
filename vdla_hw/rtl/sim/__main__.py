"""`python -m vdla.hw.rtl.sim {lint,build,package} [--config NAME_OR_JSON]`

lint     Verilator -Wall lint of the whole RTL for the config, and the check that no source
         restates a fact of the generated package (exit 1 on any message)
build    build (or find in the cache) the Verilator simulation; prints its directory
package  print the generated vdla_pkg.sv
"""
from __future__ import annotations

import argparse
import sys
import tempfile


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vdla.hw.rtl.sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("lint", "build", "package"))
    parser.add_argument("--config", default=None, help="preset name or JSON file (default: pynq)")
    args = parser.parse_args(argv)
    from vdla.hw import load_config
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
    from .. import RTL_DIR, SOURCES
    from .facts import check_sources
    with tempfile.TemporaryDirectory(prefix="vdla-lint-") as tmp:
        lines = lint(config, tmp)
    lines += check_sources(config, [RTL_DIR / name for name in SOURCES])
    for line in lines:
        print(line)
    print(f"lint of {config.name} ({config.target}), verilator -Wall and restated facts: "
          + (f"{len(lines)} message(s)" if lines else "clean"))
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
