"""What TLS costs a remote run: the same runs against `vdla serve` with Ed25519 keys (TLS 1.3,
encrypted) and with a legacy shared secret (plain TCP, every frame HMAC-SHA256-tagged), in
alternating turns, in this process on a loopback port.

A run uploads a Relu's input of --mib MiB and gets as much back; each figure is the median of
--runs runs from the connection to the result (the handshake, both transfers, the run), and the
connection alone (handshakes only) with a 64-float input.

    python benchmarks/remote_tls.py [--mib N] [--runs N] [--json] [--results FILE]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from results_file import save


def _artifact(n: int) -> bytes:
    from onnx import TensorProto, helper

    from vdla.compiler.compile_model import compile_model
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])])
    return compile_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])).to_bytes()


def _median_s(runner, data: bytes, feeds: dict, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        runner.run(data, feeds)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=64, help="input size of a run, MiB (default 64)")
    ap.add_argument("--runs", type=int, default=5, help="runs per mode and size (default 5)")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--results", metavar="FILE", help="also save the figures there, with this host")
    args = ap.parse_args(argv)
    from vdla.driver.artifact_trust import generate_key_file, generate_signing_key
    from vdla.driver.remote import RemoteRunner, RemoteServer
    from vdla.driver.remote.limits import MiB, Limits

    keys = Path(tempfile.mkdtemp(prefix="vdla_tls_bench_"))
    for name in ("board", "host"):
        generate_signing_key(keys / f"{name}.key")
    generate_key_file(keys / "secret.key")
    n = args.mib * MiB // 4
    sizes = {"small": (_artifact(64), {"x": np.ones((1, 64), np.float32)}),
             "large": (_artifact(n), {"x": np.ones((1, n), np.float32)})}
    limits = Limits(input_bytes=2 * args.mib * MiB, output_bytes=2 * args.mib * MiB)
    tls = RemoteServer("127.0.0.1", 0, key_file=keys / "board.key", client_keys=[keys / "host.key.pub"],
                       limits=limits).start()
    plain = RemoteServer("127.0.0.1", 0, key_file=keys / "secret.key", limits=limits).start()
    runners = {"tls": RemoteRunner("127.0.0.1", tls.port, keys / "host.key", server_key=keys / "board.key.pub",
                                   limits=limits),
               "hmac": RemoteRunner("127.0.0.1", plain.port, keys / "secret.key", limits=limits)}
    figures = {}
    try:
        for size, (data, feeds) in sizes.items():
            turns = {mode: [] for mode in runners}
            for _ in range(args.runs):                     # alternating, so both see the same machine
                for mode, runner in runners.items():
                    turns[mode].append(_median_s(runner, data, feeds, 1))
            for mode in runners:
                figures[f"{mode}_{size}_s"] = round(statistics.median(turns[mode]), 4)
    finally:
        tls.close()
        plain.close()
    figures.update({"mib": args.mib, "runs": args.runs,
                    "tls_vs_hmac_small": round(figures["tls_small_s"] / figures["hmac_small_s"], 3),
                    "tls_vs_hmac_large": round(figures["tls_large_s"] / figures["hmac_large_s"], 3),
                    "tls_mib_per_s": round(2 * args.mib / figures["tls_large_s"], 1),
                    "hmac_mib_per_s": round(2 * args.mib / figures["hmac_large_s"], 1)})
    print(f"a run with a 64-float input: TLS {figures['tls_small_s'] * 1e3:.1f} ms, shared secret "
          f"{figures['hmac_small_s'] * 1e3:.1f} ms ({figures['tls_vs_hmac_small']:.2f}x)")
    print(f"a run with {args.mib} MiB in and out: TLS {figures['tls_large_s']:.2f} s "
          f"({figures['tls_mib_per_s']:.0f} MiB/s), shared secret {figures['hmac_large_s']:.2f} s "
          f"({figures['hmac_mib_per_s']:.0f} MiB/s), {figures['tls_vs_hmac_large']:.2f}x")
    if args.results:
        save(args.results, figures)
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
