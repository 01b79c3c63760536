"""An error ends `vdla` with the exit status its category documents in vdla.hw.errors (1 for
any other exception), as one line on stderr; --debug shows the traceback instead."""
import re

import pytest

from vdla.driver.cli import main
from vdla.driver.cli.commands import keygen
from vdla.driver.cli.exit_codes import EXIT_CODES, exit_code
from vdla.hw import errors


def _documented_codes() -> dict[str, int]:
    """The table of the vdla.hw.errors docstring: category name -> exit status."""
    return {name: int(code) for name, code in re.findall(r"^\s{4}(\w+Error)\s+(\d+)\s", errors.__doc__, re.M)}


def test_the_cli_table_is_the_documented_one():
    assert _documented_codes() == {cls.__name__: code for cls, code in EXIT_CODES.items()}
    assert set(EXIT_CODES) == set(errors.CATEGORIES)
    # distinct, and none taken by success, the catch-all, argparse's usage error or a signal
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES) and not set(EXIT_CODES.values()) & {0, 1, 2}
    assert all(code < 128 for code in EXIT_CODES.values())


def _raising(exc):
    def run(args):
        raise exc
    return run


def _classes():
    from vdla.compiler.graph.ir import InvalidModelError
    from vdla.compiler.target import TargetError
    from vdla.driver.artifact_errors import TrustError
    from vdla.driver.executor import StepError
    from vdla.driver.remote.errors import AuthenticationError
    from vdla.hw.isa import InsnDecodeError
    # a leaf of each category, as the commands raise them: (class, its category, documented code)
    return [(InvalidModelError, "ModelError", 3), (TargetError, "ConfigError", 4),
            (errors.CompileError, "CompileError", 5), (TrustError, "ArtifactError", 6),
            (InsnDecodeError, "ArtifactError", 6), (StepError, "RunError", 7), (AuthenticationError, "RemoteError", 8)]


@pytest.mark.parametrize("category", errors.CATEGORIES, ids=lambda c: c.__name__)
def test_each_category_exits_with_its_documented_code(category, monkeypatch, capsys):
    monkeypatch.setattr(keygen, "run", _raising(category("it broke")))
    assert main(["keygen", "-o", "unused"]) == _documented_codes()[category.__name__]
    assert capsys.readouterr().err == "vdla keygen: error: it broke\n"


def test_subclasses_exit_as_their_category(monkeypatch, capsys):
    for cls, category, code in _classes():
        assert _documented_codes()[category] == code
        monkeypatch.setattr(keygen, "run", _raising(cls("x")))
        assert main(["keygen", "-o", "unused"]) == code, cls
    capsys.readouterr()


def test_other_exceptions_exit_1(monkeypatch, capsys):
    for exc in (ValueError("bad flag"), FileNotFoundError("no such file"), errors.VdlaError("no category")):
        monkeypatch.setattr(keygen, "run", _raising(exc))
        assert main(["keygen", "-o", "unused"]) == 1
        assert exit_code(exc) == 1
    assert "vdla keygen: error: no category" in capsys.readouterr().err


def test_debug_shows_the_traceback(monkeypatch):
    monkeypatch.setattr(keygen, "run", _raising(errors.RunError("it broke")))
    with pytest.raises(errors.RunError, match="it broke"):
        main(["keygen", "-o", "unused", "--debug"])
