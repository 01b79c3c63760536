"""Recurrent layers (LSTM, GRU, RNN) on the host CPU: vdla's compiled form against onnxruntime,
same inputs, same process, calls in turn.

Each case is a one-node model with constant weights, as exporters write them (PyTorch's GRU
with linear_before_reset=1, ONNX's default 0 beside it): vdla compiles it to the projection
of every step (one matmul) and the recurrence kernel (compiler/topi/recurrent.py), with 1 and
2 threads. `host_ms` is the same model run as numpy host steps (kernels=False), how the op ran
before it had a kernel, timed after the pair (one_layer.py). Every output is checked against
onnxruntime's before anything is timed.

Usage: python benchmarks/recurrent_cpu.py [--json] [--repeat N] [--quick] [--results FILE]
With --json the last line is one JSON object: per case ours_ms, ort_ms, host_ms, ratio (ours /
onnxruntime, below 1: we are faster), and geomean_ratio_vs_ort (with _1t and _2t). --results FILE
also saves it with this host (README's span: benchmarks/results/recurrent_cpu.json).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from one_layer import one_node_model, timed_row
from results_file import save

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
# name, op, seq, batch, input, hidden, attributes
CASES = [
    ("lstm_speech_100x1x80_h256", "LSTM", 100, 1, 80, 256, {}),
    ("lstm_bidir_50x1x128_h128", "LSTM", 50, 1, 128, 128, {"direction": "bidirectional"}),
    ("lstm_batch8_20x8x64_h64", "LSTM", 20, 8, 64, 64, {}),
    ("lstm_large_100x1x256_h512", "LSTM", 100, 1, 256, 512, {}),
    ("gru_100x1x80_h256", "GRU", 100, 1, 80, 256, {}),
    ("gru_torch_100x1x80_h256", "GRU", 100, 1, 80, 256, {"linear_before_reset": 1}),
    ("gru_bidir_64x4x40_h96", "GRU", 64, 4, 40, 96, {"direction": "bidirectional", "linear_before_reset": 1}),
    ("rnn_100x1x32_h64", "RNN", 100, 1, 32, 64, {}),
]
QUICK = {"lstm_speech_100x1x80_h256", "gru_torch_100x1x80_h256"}


def layer_model(op, seq, batch, size, hidden, attrs, rng):
    n_dir = 2 if attrs.get("direction") == "bidirectional" else 1
    g = GATES[op]
    weights = {"W": rng.standard_normal((n_dir, g * hidden, size)) / math.sqrt(size),
               "R": rng.standard_normal((n_dir, g * hidden, hidden)) / math.sqrt(hidden),
               "B": 0.1 * rng.standard_normal((n_dir, 2 * g * hidden))}
    return one_node_model(op, (seq, batch, size), {"hidden_size": hidden, **attrs},
                          {k: v.astype(np.float32) for k, v in weights.items()}, outputs=("y", "y_h"), opset=17)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="two cases, fewer rounds")
    ap.add_argument("--results", help="also save the figures (JSON, with this host) to this file")
    args = ap.parse_args(argv)
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'case':30s} {'thr':>3s} {'ours ms':>9s} {'ort ms':>9s} {'host ms':>9s} {'ratio':>6s}")
    for name, op, seq, batch, size, hidden, attrs in CASES:
        if args.quick and name not in QUICK:
            continue
        model = layer_model(op, seq, batch, size, hidden, attrs, rng)
        feeds = {"x": rng.standard_normal((seq, batch, size)).astype(np.float32)}
        compiled, host = compile_model(model), compile_model(model, kernels=False)
        if not any(s.kind == "kernel" and s.op == f"{op}Scan" for s in compiled.plan.steps):
            print(f"{name}: the recurrence did not compile: {compiled.header['compile']['host_reasons']}")
            return 1
        for threads in (1, 2):
            numpy_steps = Executor(host)
            row = timed_row(name, model, compiled, feeds, threads, lambda: numpy_steps.run(feeds), args.quick,
                            args.repeat)
            if isinstance(row, str):
                print(row)
                return 1
            rows.append(row)
            print(f"{name:30s} {threads:3d} {row['ours_ms']:9.3f} {row['ort_ms']:9.3f} {row['host_ms']:9.3f} "
                  f"{row['ratio']:6.2f}", flush=True)

    def geo(rs):
        return round(math.exp(sum(math.log(r["ratio"]) for r in rs) / len(rs)), 4) if rs else None
    summary = {"cases": rows, "geomean_ratio_vs_ort": geo(rows),
               "geomean_ratio_vs_ort_1t": geo([r for r in rows if r["threads"] == 1]),
               "geomean_ratio_vs_ort_2t": geo([r for r in rows if r["threads"] == 2])}
    print(f"geomean ratio (ours/ort): {summary['geomean_ratio_vs_ort']} "
          f"(1 thread {summary['geomean_ratio_vs_ort_1t']}, 2 threads {summary['geomean_ratio_vs_ort_2t']})")
    if args.json:
        print(json.dumps(summary))
    if args.results:
        save(args.results, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
