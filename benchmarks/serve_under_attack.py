"""`vdla serve` under hostile clients: how long a key holder waits for a run while silent,
trickling, garbage and wrong-key clients hold and retake every connection they can.

The server and the good client use Ed25519 keys (TLS, vdla.driver.remote.tls): a trickler
sends the start of a TLS ClientHello a byte at a time, a wrong-key client completes TLS and
signs with a key the server does not list; --legacy-secret runs the same with a shared secret
(plain TCP), where the trickler sends a frame's prefix.

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


# the first bytes of a TLS 1.x ClientHello record: a server waits for the rest
_CLIENT_HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(89)


def _attackers(port: int, wrong: dict, data: bytes, feeds: dict, stop: threading.Event, count: int,
               tls: bool):
    from vdla.driver.remote import RemoteRunner
    from vdla.driver.remote.protocol import MAGIC, PREFIX

    def silent():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            while not stop.is_set() and sock.recv(4096):
                pass

    def trickling():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            for byte in _CLIENT_HELLO if tls else PREFIX.pack(MAGIC, 100, 0) + b"x" * 100:
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
        RemoteRunner("127.0.0.1", port, io_timeout_s=30, **wrong).run(data, feeds)

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


def _good_run_s(port: int, keys: dict, data: bytes, feeds: dict) -> tuple[float, int]:
    """(seconds from the first attempt to the result, attempts)."""
    from vdla.driver.remote import RemoteConnectionError, RemoteRunner, ServerBusy
    started, attempts = time.perf_counter(), 0
    while True:
        attempts += 1
        try:
            RemoteRunner("127.0.0.1", port, io_timeout_s=60, **keys).run(data, feeds)
            return time.perf_counter() - started, attempts
        except (ServerBusy, RemoteConnectionError):
            if time.perf_counter() - started > 600:
                raise


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--attackers", type=int, default=16, help="hostile client threads (default 16)")
    parser.add_argument("--legacy-secret", action="store_true", help="a shared secret instead of Ed25519 keys")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from vdla.driver.artifact_trust import generate_key_file, generate_signing_key
    from vdla.driver.remote import RemoteServer
    logging.getLogger("vdla.driver.remote").addHandler(logging.NullHandler())   # the attackers' noise
    logging.getLogger("vdla.driver.remote").propagate = False
    data, feeds = _artifact()
    keys = Path(tempfile.mkdtemp(prefix="vdla_serve_bench_"))
    if args.legacy_secret:
        generate_key_file(keys / "board.key")
        generate_key_file(keys / "other.key")
        serving = {"key_file": keys / "board.key"}
        good, wrong = {"key_file": keys / "board.key"}, {"key_file": keys / "other.key"}
    else:
        for name in ("board", "host", "other"):
            generate_signing_key(keys / f"{name}.key")
        serving = {"key_file": keys / "board.key", "client_keys": [keys / "host.key.pub"]}
        good = {"key_file": keys / "host.key", "server_key": keys / "board.key.pub"}
        wrong = {"key_file": keys / "other.key", "server_key": keys / "board.key.pub"}
    with RemoteServer("127.0.0.1", 0, **serving).start() as server:
        quiet = [_good_run_s(server.port, good, data, feeds)[0] for _ in range(args.runs)]
        stop = threading.Event()
        threads = _attackers(server.port, wrong, data, feeds, stop, args.attackers, not args.legacy_secret)
        time.sleep(1.0)                              # let them take every connection
        attacked, attempts = [], []
        for _ in range(args.runs):
            seconds, tries = _good_run_s(server.port, good, data, feeds)
            attacked.append(seconds)
            attempts.append(tries)
        stop.set()
        for t in threads:
            t.join(timeout=15)
    summary = {"runs": args.runs, "attackers": args.attackers, "mode": "shared secret" if args.legacy_secret else "TLS",
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
