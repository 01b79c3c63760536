"""The process in which `vdla serve` runs artifacts (`python -m vdla.driver.remote.worker`).

Why a process of its own: a run must be stoppable. CPU kernels are machine code running in
the process that loaded them and the simulator is a loop in Python; neither can be
interrupted from another thread. The server kills this process at its run timeout, and the
device goes with it (the simulator's DRAM, an RTL simulation, a board's CMA buffer and
register mapping); the next run gets a new process, which on a board downloads the bitstream
again and so resets the accelerator. A kernel that crashes (an artifact is code) ends this
process, not the server.

It speaks frames (protocol.py) on stdin and stdout, unsealed: the pipes are private to the
server, which has already authenticated the client and checked the artifact against its trust
policy. Anything else printing to stdout would corrupt the stream, so stdout is pointed at
stderr first and the frames go to a private copy of the original descriptor.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

from ..artifact import verify
from ..artifact_errors import ArtifactError
from ..artifact_trust import TrustPolicy
from ..plan import VdlaStep
from .arrays import unpack
from .errors import ArtifactRefused, RemoteConnectionError, RemoteError, RemoteRunError
from .limits import Limits, mib
from .protocol import Channel, PipeStream
from .run_request import RunRequest, parse_run_request
from .run_result import RemoteResult, result_to_wire


class DeviceRuns:
    """Runs requests on a device of one kind, opened for each run and closed after it (the
    executor allocates device buffers it never frees, so a device lives for one run)."""

    def __init__(self, kind: str):
        self.kind = kind

    def probe(self) -> None:
        """Open the device once, so that `vdla serve` fails at start on a machine without it;
        a board gets its bitstream downloaded here."""
        from ..devices import open_device
        open_device(self.kind).close()

    def _device(self, artifact):
        """What Executor takes: the kind (sim and rtl are built for the artifact's config), or
        a board opened without downloading its bitstream again (probe did)."""
        if self.kind == "pynq" and any(isinstance(s, VdlaStep) for s in artifact.plan.steps):
            from ..devices import open_device
            return open_device("pynq", program=False)
        return self.kind

    def run(self, request: RunRequest, payload: bytearray, limits: Limits) -> RemoteResult:
        from ..executor import Executor
        from ..profile import profile_run
        data = memoryview(payload)[:request.artifact_bytes]    # parsed in place: the parameters are views
        # parsing only: the server has checked the trust policy on these very bytes
        artifact = verify(data, TrustPolicy(), source="the uploaded artifact")
        feeds = unpack(request.inputs, payload, request.artifact_bytes)
        device = self._device(artifact)
        executor = None
        try:
            executor = Executor(artifact, device=device, threads=request.threads)
            times = []
            for _ in range(request.repeat):
                start = time.perf_counter()
                outputs = executor.run(feeds)
                times.append(time.perf_counter() - start)
            rows = profile_run(artifact, feeds, executor.device)[1] if request.profile else None
            total = sum(v.nbytes for v in outputs.values())
            if total > limits.output_bytes:
                raise RemoteRunError(f"the outputs take {mib(total)}; this server sends at most "
                                     f"{mib(limits.output_bytes)} (vdla serve --max-output-mb)")
            dev = executor.device
            title = artifact.plan.name + (f" on {dev.config.name} @ {dev.config.clock_mhz} MHz" if dev else "")
            return RemoteResult(outputs, rows, times, repr(dev) if dev else "none", title)
        finally:
            opened = executor.device if executor is not None else device
            if opened is not None and not isinstance(opened, str):
                opened.close()


def _answer(runs: DeviceRuns, header: dict, payload: bytearray, limits: Limits):
    try:
        request = parse_run_request(header, limits, "the run request")
        return result_to_wire(runs.run(request, payload, limits))
    except RemoteError as exc:
        error = exc
    except ArtifactError as exc:   # built for another accelerator or machine than this one
        error = ArtifactRefused(f"the artifact cannot run on this server: {exc}")
    except Exception as exc:       # the run's own failure, carried back to the client by name
        error = RemoteRunError(f"the run failed on the server: {type(exc).__name__}: {exc}")
    return {"type": "error", "kind": error.kind, "message": str(error)}, []


def _end_with_the_server(server: int, every_s: float = 0.5) -> None:
    """Exit when the server process is gone (killed, or stopped without closing this worker): an
    orphaned worker would keep the device and its buffers, and a restarted server would start a
    second worker on the same device. A thread watches the parent's pid, which changes when it
    dies; prctl's parent-death signal would not do, as it follows the thread that started the
    worker, and the server replaces workers from connection threads that end."""
    def watch():
        while os.getppid() == server:
            time.sleep(every_s)
        os._exit(1)
    threading.Thread(target=watch, name="watch the server", daemon=True).start()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vdla.driver.remote.worker")
    parser.add_argument("--device", required=True)
    parser.add_argument("--limits", required=True, help="the server's Limits as JSON")
    args = parser.parse_args(argv)
    # Ctrl-C in the terminal reaches the whole process group: the server decides when this ends
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_the_server(os.getppid())
    frames_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    channel = Channel(PipeStream(sys.stdin.buffer, frames_out), "the server")
    limits = Limits.from_wire(json.loads(args.limits))
    runs = DeviceRuns(args.device)
    try:
        runs.probe()
    except Exception as exc:
        channel.send_error(RemoteRunError(f"--device {args.device} cannot be opened here: "
                                          f"{type(exc).__name__}: {exc}"))
        return 1
    channel.send({"type": "ready", "pid": os.getpid()})
    while True:
        try:
            header, payload = channel.recv("run", limits.header_bytes, limits.artifact_bytes + limits.input_bytes)
        except RemoteConnectionError:
            return 0           # the server closed the pipe: it is shutting down
        except RemoteError as exc:
            channel.send_error(exc)   # out of step with the server: it starts a new worker
            return 1
        reply, parts = _answer(runs, header, payload, limits)
        del payload
        try:
            channel.send(reply, parts)
        except RemoteConnectionError:
            return 0           # the server ended while this run went on


if __name__ == "__main__":
    sys.exit(main())
