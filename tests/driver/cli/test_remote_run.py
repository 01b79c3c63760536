"""`vdla serve` as a process and `vdla run --remote` as users call them, on 127.0.0.1: the
outputs equal a local `vdla run`'s bytes, the profile table and chart come back, Ctrl-C or
SIGTERM stops the server and its worker (and a killed server's worker ends itself), and the flags
that do not fit together are named."""
import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from vdla.driver.artifact_trust import generate_key_file, generate_signing_key
from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ConfigError, RemoteError

from e2e.model_builders import vdla_cnn   # tests/ is on sys.path

START_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from vdla.compiler.compile_model import compile_model
    d = tmp_path_factory.mktemp("remote_cli")
    rng = np.random.default_rng(0)
    calib = {"input": rng.standard_normal((4, 1, 3, 32, 32)).astype(np.float32)}
    compile_model(vdla_cnn(), target="vdla", hw_config="pynq", calibration=calib).save(d / "m.vdla")
    np.save(d / "x.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
    generate_key_file(d / "secret.key")
    generate_key_file(d / "other.key")
    for name in ("board", "host", "stranger"):
        generate_signing_key(d / f"{name}.key")
    return d


def serve(*flags) -> tuple[subprocess.Popen, str]:
    """Start `vdla serve --port 0 ...`; -> (the process, HOST:PORT from its first line)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from vdla.driver.cli import main; sys.exit(main())",
                             "serve", "--port", "0", *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT_S)
    line = proc.stdout.readline() if ready else ""
    if "listening on" not in line:
        proc.kill()
        raise AssertionError(f"vdla serve did not start: {line!r} {proc.stderr.read()}")
    return proc, line.split("listening on ")[1].split(";")[0]


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(START_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_vdla_run_remote_equals_a_local_run(files, capsys):
    d = files
    proc, address = serve("--key-file", str(d / "board.key"), "--client-key", str(d / "host.key.pub"))
    try:
        assert main(["run", str(d / "m.vdla"), "--input", f"input={d / 'x.npy'}", "--output", str(d / "local")]) == 0
        capsys.readouterr()
        assert main(["run", str(d / "m.vdla"), "--remote", address, "--key-file", str(d / "host.key"),
                     "--server-key", str(d / "board.key.pub"),
                     "--input", f"input={d / 'x.npy'}", "--output", str(d / "remote"), "--profile"]) == 0
        out = capsys.readouterr().out
        assert f"ran on vdla serve at {address}: SimulatorDevice" in out
        assert "Conv_3" in out and "every kernel on one virtual thread" in out and "on the server" in out
        assert (d / "remote" / "profile.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        local, remote = np.load(d / "local" / "softmax_57.npy"), np.load(d / "remote" / "softmax_57.npy")
        assert local.dtype == remote.dtype and local.tobytes() == remote.tobytes()

        assert main(["run", str(d / "m.vdla"), "--remote", address, "--key-file", str(d / "stranger.key"),
                     "--server-key", str(d / "board.key.pub")]) == EXIT_CODES[RemoteError]
        assert "none of this server's --client-key keys" in capsys.readouterr().err
    finally:
        assert stop(proc) == 130
    log = proc.stderr.read()
    assert "-byte artifact on sim in" in log and "authentication failed" in log


def test_a_legacy_shared_secret_still_connects(files, capsys):
    d = files
    proc, address = serve("--key-file", str(d / "secret.key"))
    try:
        assert main(["run", str(d / "m.vdla"), "--remote", address, "--key-file", str(d / "secret.key"),
                     "--input", f"input={d / 'x.npy'}"]) == 0
        assert main(["run", str(d / "m.vdla"), "--remote", address, "--key-file", str(d / "other.key")]) == \
            EXIT_CODES[RemoteError]
        assert "is not this server's key" in capsys.readouterr().err
    finally:
        assert stop(proc) == 130


def test_ctrl_c_stops_the_server_and_its_worker(files):
    proc, _ = serve("--insecure-loopback")
    worker = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(worker) == 1
    assert stop(proc) == 130
    with pytest.raises(ProcessLookupError):
        os.kill(int(worker[0]), 0)


def _gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie whose new parent has not reaped it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 130), (signal.SIGKILL, -signal.SIGKILL)],
                         ids=["sigterm", "sigkill"])
def test_a_server_ended_by_a_signal_leaves_no_worker_behind(files, sig, code):
    """SIGTERM stops the server as Ctrl-C does; after SIGKILL, which no handler sees, the worker
    notices its server is gone and exits: neither leaves a worker holding the device."""
    proc, _ = serve("--insecure-loopback")
    (worker,) = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    proc.send_signal(sig)
    assert proc.wait(START_TIMEOUT_S) == code
    deadline = time.monotonic() + 10
    while not _gone(int(worker)):
        assert time.monotonic() < deadline, f"worker {worker} outlived its server"
        time.sleep(0.1)


REMOTE = EXIT_CODES[RemoteError]     # the AuthenticationErrors: no key where one is needed
CONFIG = EXIT_CODES[ConfigError]     # flags that do not fit together (OptionError)


@pytest.mark.parametrize("argv,message,code", [
    (["run", "M", "--remote", "127.0.0.1:9", "--key-file", "K", "--trace", "t.json"], "--trace is not available", CONFIG),
    (["run", "M", "--remote", "127.0.0.1:9", "--key-file", "K", "--hw-config", "pynq"], "--hw-config is not", CONFIG),
    (["run", "M", "--key-file", "K"], "give --remote HOST:PORT too", CONFIG),
    (["run", "M", "--remote", "board"], "expected HOST:PORT", 1),
    (["run", "M", "--remote", "127.0.0.1:9"], "and the server's public key (--server-key", REMOTE),
    (["run", "M", "--remote", "10.0.0.2:9", "--insecure-loopback"], "127.0.0.1 or ::1 only", 1),
    (["serve", "--port", "0"], "needs --key-file", REMOTE),
    (["serve", "--port", "0", "--host", "0.0.0.0", "--insecure-loopback"], "refused on host '0.0.0.0'", 1),
    (["serve", "--port", "0", "--insecure-loopback", "--max-artifact-mb", "0"], "--max-artifact-mb must be", CONFIG),
])
def test_flags_that_do_not_fit_are_named(argv, message, code, capsys):
    assert main(argv) == code
    assert message in capsys.readouterr().err


def test_an_unreachable_server_is_named(files, capsys):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]     # bound, not listening: connections are refused
        assert main(["run", str(files / "m.vdla"), "--remote", f"127.0.0.1:{port}", "--insecure-loopback"]) == \
            EXIT_CODES[RemoteError]
    assert "connection refused" in capsys.readouterr().err.lower()
