"""`vdla run --remote` runs on the device the server's `vdla serve --device` opened: a --device the
user gives with it is refused by name (it was silently ignored), while leaving it out still means
the simulator for a local run."""
import pytest

from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ConfigError
from vdla.driver.plan import Plan


@pytest.mark.parametrize("device", ["sim", "rtl", "pynq"])
def test_an_explicit_device_with_remote_is_refused(device, tmp_path, capsys):
    # port 1 on loopback: were the flag ignored, the run would try to connect and fail differently
    code = main(["run", str(tmp_path / "m.vdla"), "--remote", "127.0.0.1:1", "--insecure-loopback",
                 "--device", device])
    err = capsys.readouterr().err
    assert code == EXIT_CODES[ConfigError]
    assert f"--device {device} is not available with --remote" in err and "vdla serve --device" in err


def test_without_device_a_local_run_uses_the_simulator(monkeypatch, tmp_path):
    from vdla.driver.cli.commands import run as run_command
    opened = []
    monkeypatch.setattr(run_command, "_device", lambda artifact, kind, trace: opened.append(kind) or None)
    monkeypatch.setattr("vdla.driver.artifact.load", lambda path, policy=None: _NoSteps())
    monkeypatch.setattr("vdla.driver.executor.Executor", _StopHere)
    with pytest.raises(_Stopped):
        main(["run", str(tmp_path / "m.vdla"), "--debug"])
    assert opened == ["sim"]


class _Stopped(Exception):
    pass


class _NoSteps:
    plan = Plan("m", (), (), {}, {}, 0, 0, ())


class _StopHere:
    def __init__(self, *args, **kwargs):
        raise _Stopped
