"""The `vdla` command line.

Each subcommand lives in its own module under vdla.driver.cli.commands and registers itself
with `add_parser(subparsers)` / `run(args)`. Commands that need the compiler (compile,
tune) import it lazily inside `run`, so the deploy runtime never pulls the compiler in.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands


def _command_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"{commands.__name__}.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vdla", description="VDLA accelerator stack")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a user-facing tool: one clear line, not a traceback
        if getattr(args, "debug", False):
            raise
        print(f"vdla {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
