"""Peak memory of `vdla serve` for a maximum-size upload: the server and its worker process
(their VmHWM from /proc, Linux) after one run whose inputs are as large as the server accepts
(its default input limit for this machine: vdla.driver.remote.limits.Limits.for_memory), beside
the upload's size and each process's resident memory before the run.

The server runs as `vdla serve` in a process of its own with Ed25519 keys (TLS); the client,
in this process, uploads a Relu's input of that size and gets as much back.

    python benchmarks/serve_memory.py [--mib N] [--json]
"""
from __future__ import annotations

import argparse
import json
import select
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from remote_tls import _artifact


def _kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _worker(pid: int) -> int:
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    if len(children) != 1:
        raise SystemExit(f"expected one worker process under the server, found {children}")
    return int(children[0])


def main(argv=None) -> int:
    from vdla.driver.artifact_trust import generate_signing_key
    from vdla.driver.remote import RemoteRunner
    from vdla.driver.remote.limits import MiB, Limits
    default = Limits.for_memory().input_bytes // MiB
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=default,
                    help=f"input size, MiB (default {default}: the server's input limit on this machine)")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    args = ap.parse_args(argv)
    keys = Path(tempfile.mkdtemp(prefix="vdla_serve_memory_"))
    for name in ("board", "host"):
        generate_signing_key(keys / f"{name}.key")
    n = args.mib * MiB // 4
    data, feeds = _artifact(n), {"x": np.ones((1, n), np.float32)}
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from vdla.driver.cli import main; sys.exit(main())",
                             "serve", "--port", "0", "--key-file", str(keys / "board.key"), "--client-key",
                             str(keys / "host.key.pub")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        line = proc.stdout.readline() if ready else ""
        if "listening on" not in line:
            raise SystemExit(f"vdla serve did not start: {line!r}")
        port = int(line.split("listening on ")[1].split(";")[0].rsplit(":", 1)[1])
        worker = _worker(proc.pid)
        before = {"server": _kib(proc.pid, "VmRSS"), "worker": _kib(worker, "VmRSS")}
        limits = Limits(input_bytes=max(args.mib, 1) * MiB, output_bytes=max(args.mib, 1) * MiB)
        runner = RemoteRunner("127.0.0.1", port, keys / "host.key", server_key=keys / "board.key.pub", limits=limits)
        outputs, _ = runner.run(data, feeds)
        assert outputs["y"].nbytes == n * 4
        peak = {"server": _kib(proc.pid, "VmHWM"), "worker": _kib(worker, "VmHWM")}
    finally:
        proc.terminate()
        proc.wait(30)
    upload = len(data) + n * 4
    figures = {"upload_mib": round(upload / MiB, 1), "input_limit_mib": default,
               **{f"{who}_before_mib": round(kib / 1024, 1) for who, kib in before.items()},
               **{f"{who}_peak_mib": round(kib / 1024, 1) for who, kib in peak.items()}}
    figures["server_peak_over_upload"] = round((peak["server"] - before["server"]) * 1024 / upload, 2)
    figures["worker_peak_over_upload"] = round((peak["worker"] - before["worker"]) * 1024 / upload, 2)
    print(f"upload {figures['upload_mib']} MiB (inputs at this machine's limit, {default} MiB); the outputs as large")
    for who in ("server", "worker"):
        print(f"  {who:<7} {figures[f'{who}_before_mib']:>7.1f} MiB before, "
              f"peak {figures[f'{who}_peak_mib']:>7.1f} MiB: {figures[f'{who}_peak_over_upload']:.2f}x the upload "
              "above its start")
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
