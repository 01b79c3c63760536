"""`vdla serve` under hostile clients: how long a key holder waits for a run while silent,
trickling, garbage and wrong-key clients hold and retake every connection they can.

The server runs in this process with its default limits and timeouts (vdla.driver.remote.defaults)
on an ephemeral loopback port; the bound beside the figures is the same run with no attackers.
Each good run counts from its first connection attempt to its result, retries included (a
connection cut by a newer one, or a busy answer, is retried at once).

    python benchmarks/serve_under_attack.py [--runs N] [--attackers N] [--json]
"""
from __future__ import annotations

import argparse
import json
import logging
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np


def _artifact() -> tuple[bytes, dict]:
    from onnx import TensorProto, helper

    from vdla.compiler.compile_model import compile_model
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return compile_model(model).to_bytes(), {"x": np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64)}


def _attackers(port: int, other_key: Path, data: bytes, feeds: dict, stop: threading.Event, count: int):
    from vdla.driver.remote import RemoteRunner
    from vdla.driver.remote.protocol import MAGIC, PREFIX

    def silent():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            while not stop.is_set() and sock.recv(4096):
                pass

    def trickling():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            for byte in PREFIX.pack(MAGIC, 100, 0) + b"x" * 100:
                if stop.is_set():
                    return
                sock.sendall(bytes([byte]))
                time.sleep(0.2)

    def garbage():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"[" * 4000)
            while not stop.is_set():
                sock.sendall(b"x")
                time.sleep(0.2)

    def wrong_key():
        RemoteRunner("127.0.0.1", port, other_key, io_timeout_s=30).run(data, feeds)

    kinds = [silent, trickling, garbage, wrong_key]

    def loop(kind):
        while not stop.is_set():
            try:
                kind()
            except Exception:
                pass
    threads = [threading.Thread(target=loop, args=(kinds[i % len(kinds)],), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    return threads


def _good_run_s(port: int, key: Path, data: bytes, feeds: dict) -> tuple[float, int]:
    """(seconds from the first attempt to the result, attempts)."""
    from vdla.driver.remote import RemoteConnectionError, RemoteRunner, ServerBusy
    started, attempts = time.perf_counter(), 0
    while True:
        attempts += 1
        try:
            RemoteRunner("127.0.0.1", port, key, io_timeout_s=60).run(data, feeds)
            return time.perf_counter() - started, attempts
        except (ServerBusy, RemoteConnectionError):
            if time.perf_counter() - started > 600:
                raise


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--attackers", type=int, default=16, help="hostile client threads (default 16)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from vdla.driver.artifact_trust import generate_key_file
    from vdla.driver.remote import RemoteServer
    logging.getLogger("vdla.driver.remote").addHandler(logging.NullHandler())   # the attackers' noise
    logging.getLogger("vdla.driver.remote").propagate = False
    data, feeds = _artifact()
    keys = Path(tempfile.mkdtemp(prefix="vdla_serve_bench_"))
    generate_key_file(keys / "board.key")
    generate_key_file(keys / "other.key")
    with RemoteServer("127.0.0.1", 0, key_file=keys / "board.key").start() as server:
        quiet = [_good_run_s(server.port, keys / "board.key", data, feeds)[0] for _ in range(args.runs)]
        stop = threading.Event()
        threads = _attackers(server.port, keys / "other.key", data, feeds, stop, args.attackers)
        time.sleep(1.0)                              # let them take every connection
        attacked, attempts = [], []
        for _ in range(args.runs):
            seconds, tries = _good_run_s(server.port, keys / "board.key", data, feeds)
            attacked.append(seconds)
            attempts.append(tries)
        stop.set()
        for t in threads:
            t.join(timeout=15)
    summary = {"runs": args.runs, "attackers": args.attackers,
               "quiet_median_ms": round(statistics.median(quiet) * 1e3, 1),
               "quiet_worst_ms": round(max(quiet) * 1e3, 1),
               "attacked_median_ms": round(statistics.median(attacked) * 1e3, 1),
               "attacked_worst_ms": round(max(attacked) * 1e3, 1),
               "attacked_worst_attempts": max(attempts)}
    print(f"{'':<22} {'median ms':>10} {'worst ms':>10}")
    print(f"{'no attackers':<22} {summary['quiet_median_ms']:>10} {summary['quiet_worst_ms']:>10}")
    print(f"{f'{args.attackers} hostile clients':<22} {summary['attacked_median_ms']:>10} "
          f"{summary['attacked_worst_ms']:>10}   (at most {summary['attacked_worst_attempts']} attempts)")
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
