"""The options commands share are stated once: --debug on every command, and --device (on the
commands that run on an accelerator) takes exactly the device kinds of vdla.driver.devices."""
import argparse

import pytest

from vdla.driver.cli import build_parser, main
from vdla.driver.devices import DEVICE_KINDS

# the commands that had --debug before it was stated once (every command has it now)
HAD_DEBUG = {"compile", "demo", "dse", "keygen", "run", "serve", "tune"}
DEVICE_COMMANDS = {"demo", "run", "serve"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _option(parser, flag):
    return next((a for a in parser._actions if flag in a.option_strings), None)


def test_every_command_has_debug():
    commands = _commands()
    assert HAD_DEBUG <= set(commands)
    for name, parser in commands.items():
        debug = _option(parser, "--debug")
        assert debug is not None and debug.default is False, name


def test_device_commands_take_the_device_kinds():
    for name, parser in _commands().items():
        device = _option(parser, "--device")
        assert (device is not None) == (name in DEVICE_COMMANDS), name
        for kind in DEVICE_KINDS if device else ():
            assert parser.parse_known_args(["--device", kind, *_required(name)])[0].device == kind


def _required(command: str) -> list[str]:
    return ["m.vdla"] if command == "run" else []


@pytest.mark.parametrize("command", sorted(DEVICE_COMMANDS))
def test_an_unknown_device_is_refused_with_the_list(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, *_required(command), "--device", "fpga"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "'fpga'" in err and all(f"{kind}" in err.split("'fpga'")[1] for kind in DEVICE_KINDS), err
