"""The `vdla` command line.

Each subcommand lives in its own module under vdla.driver.cli.commands and registers itself
with `add_parser(subparsers)` / `run(args)`. Commands that need the compiler (compile,
tune) import it lazily inside `run`, so the deploy runtime never pulls the compiler in.
The options commands share are stated once (options.py: --debug on every command, --device);
an error is one line on stderr and the exit status of its category (exit_codes.py).
"""
from __future__ import annotations

import argparse
import importlib
import io
import os
import pkgutil
import select
import signal
import sys

from . import commands
from .exit_codes import exit_code
from .options import add_debug_option

# what a shell reports for a tool its reader left (`vdla run ... | head`): killed by SIGPIPE
CLOSED_STDOUT_EXIT = 128 + getattr(signal, "SIGPIPE", 13)


def _command_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"{commands.__name__}.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vdla", description="VDLA accelerator stack")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        p = module.add_parser(sub)
        add_debug_option(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()      # a reader that left shows here, not as a message at exit
        return code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a user-facing tool: one clear line, not a traceback
        if isinstance(exc, BrokenPipeError) and _stdout_reader_left():
            _discard_stdout()
            return CLOSED_STDOUT_EXIT
        if getattr(args, "debug", False):
            raise
        print(f"vdla {args.command}: error: {exc}", file=sys.stderr)
        return exit_code(exc)


def _stdout_reader_left() -> bool:
    """Whether the broken pipe is stdout's (the reader closed it early, as `head` does) rather
    than another pipe or a socket (vdla run --remote), which is an error worth a message."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        return True
    except OSError:
        return False
    try:     # nothing left to flush: Linux reports a pipe without readers as POLLERR
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False


def _discard_stdout() -> None:
    """Point stdout at the null device: the interpreter flushes it at exit, and the output
    still buffered would otherwise end in 'Exception ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass


if __name__ == "__main__":
    sys.exit(main())
