"""The server's handle on its worker process (worker.py): start it, hand it a run with a
deadline, and kill it when the deadline passes or it stops making sense; the next run starts a
new one. The worker is kept between runs so a run does not pay for Python, numpy and the
device's start-up (seconds on a board's ARM cores)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

from .errors import RemoteError, RemoteRunError, RemoteTimeout
from .limits import Limits
from .protocol import Channel, PipeStream

STARTUP_TIMEOUT_S = 300.0      # importing numpy and opening a board takes seconds on a Zynq-7000
_REPLY_HEADER_BYTES = 64 << 20   # the worker is ours; the client applies its own limit again


def _ended(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class WorkerProcess:
    def __init__(self, device: str, limits: Limits, startup_timeout_s: float = STARTUP_TIMEOUT_S):
        self.device, self.limits, self.startup_timeout_s = device, limits, startup_timeout_s
        self.proc: subprocess.Popen | None = None
        self.channel: Channel | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def start(self) -> None:
        """Start a worker and wait until it has opened the device once (RemoteRunError with the
        worker's reason when it cannot)."""
        command = [sys.executable, "-m", "vdla.driver.remote.worker", "--device", self.device,
                   "--limits", json.dumps(self.limits.to_wire())]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.channel = Channel(PipeStream(self.proc.stdout, self.proc.stdin), f"worker process {self.proc.pid}")
        self._exchange(lambda: self.channel.recv("ready", 4096), self.startup_timeout_s, "starting")

    def run(self, header: dict, parts: list, timeout_s: float) -> tuple[dict, bytearray]:
        """The worker's result for one run request; RemoteTimeout (the worker killed) past
        `timeout_s`, RemoteRunError when the worker dies, the worker's own error otherwise.
        `parts` is emptied once sent, so that a caller holding the upload only through it has
        it freed while the worker runs, before the result arrives."""
        if self.pid is None:
            self.start()
        channel = self.channel

        def exchange():
            channel.send(header, parts)
            parts.clear()
            return channel.recv("result", _REPLY_HEADER_BYTES, self.limits.output_bytes)
        return self._exchange(exchange, timeout_s, "running")

    def _exchange(self, work, timeout_s: float, what: str):
        """Do `work` (blocking pipe I/O) on a thread of its own, so that the wait has a deadline."""
        box = {}

        def target():
            try:
                box["value"] = work()
            except BaseException as exc:   # handed to the waiting thread below
                box["error"] = exc
        thread = threading.Thread(target=target, name=f"vdla worker {what}", daemon=True)
        thread.start()
        thread.join(timeout_s)
        if thread.is_alive():
            self.kill()
            thread.join(10.0)
            if what == "starting":
                raise RemoteRunError(f"the worker for --device {self.device} did not start within {timeout_s:g} s")
            raise RemoteTimeout(f"the run took longer than the server's timeout of {timeout_s:g} s: the server "
                                "killed its worker process, which frees the device, and starts a new one for the "
                                "next run")
        error = box.get("error")
        if error is None:
            return box["value"]
        if isinstance(error, RemoteError) and error.from_peer:
            if what == "starting":
                self.kill()
            raise error             # the worker reported it in step: it serves the next run
        code = self._exit_code()
        self.kill()                 # died, or out of step: the next run starts a new worker
        if isinstance(error, RemoteError):
            how = _ended(code) if code is not None else "it answered out of step and was stopped"
            raise RemoteRunError(f"the worker process failed while {what} ({how}): {error}; the server starts "
                                 "a new worker for the next run") from None
        raise error

    def _exit_code(self, wait_s: float = 2.0) -> int | None:
        """The worker's exit status once it has ended (its pipe closes just before), else None."""
        try:
            return self.proc.wait(wait_s) if self.proc is not None else None
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass

    def close(self, grace_s: float = 5.0) -> None:
        """Let the worker end on its own (its stdin closes), else kill it."""
        proc = self.proc
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(grace_s)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()
        self.proc = None
