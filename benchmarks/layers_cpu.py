"""Single layers that CNN and sequence models beyond the classifiers use, on the host CPU: vdla's
compiled form against onnxruntime, same inputs, same process, calls in turn; and the op's numpy
statement (vdla's reference interpreter on the imported graph, before any pass), how these ops
ran as host steps before they had kernels.

Cases: transposed convolutions (a U-Net decoder's 2x2 stride 2, a DCGAN's 4x4 stride 2 pad 1),
InstanceNormalization and GroupNormalization of a 64-channel 64x64 map, Mish (YOLOv4), LogSoftmax
(a classifier's 1000 classes, a CTC head's 29), DepthToSpace, Expand. Each output is checked
against onnxruntime's before anything is timed; `host_ms` is timed after the pair, not between
their calls (one_layer.py).

Usage: python benchmarks/layers_cpu.py [--json] [--repeat N] [--threads 1,2] [--quick]
With --json the last line is one JSON object: per case and thread count ours_ms, ort_ms,
host_ms, ratio (ours / onnxruntime; below 1: we are faster), kernels (the plan's step kinds),
and geomean_ratio_vs_ort.
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from one_layer import one_node_model, timed_row


def _weight(rng, *shape):
    return (rng.standard_normal(shape) / math.sqrt(math.prod(shape[1:]) or 1)).astype(np.float32)


# name -> (op, input shape, attributes, constant operands (name -> array builder))
CASES = {
    "convtranspose_unet_128x32x32_k2s2": ("ConvTranspose", (1, 128, 32, 32), {"strides": [2, 2]},
                                          {"w": lambda r: _weight(r, 128, 64, 2, 2), "b": lambda r: _weight(r, 64)}),
    "convtranspose_dcgan_64x32x32_k4s2p1": ("ConvTranspose", (1, 64, 32, 32), {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                                            {"w": lambda r: _weight(r, 64, 32, 4, 4)}),
    "instancenorm_64x64x64": ("InstanceNormalization", (1, 64, 64, 64), {},
                              {"s": lambda r: _weight(r, 64), "b": lambda r: _weight(r, 64)}),
    "groupnorm_64x64x64_g8": ("GroupNormalization", (1, 64, 64, 64), {"num_groups": 8},
                              {"s": lambda r: _weight(r, 64), "b": lambda r: _weight(r, 64)}),
    "mish_64x64x64": ("Mish", (1, 64, 64, 64), {}, {}),
    "logsoftmax_32x1000": ("LogSoftmax", (32, 1000), {}, {}),
    "logsoftmax_ctc_100x29": ("LogSoftmax", (100, 29), {}, {}),
    "depthtospace_64x32x32_b2": ("DepthToSpace", (1, 64, 32, 32), {"blocksize": 2}, {}),
    "expand_64x1x64_to_4x64x64x64": ("Expand", (1, 64, 1, 64), {},
                                     {"shape": lambda r: np.array([4, 64, 64, 64], np.int64)}),
}
QUICK = ("convtranspose_unet_128x32x32_k2s2", "instancenorm_64x64x64")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", default="1,2", help="thread counts, comma separated (default 1,2)")
    ap.add_argument("--quick", action="store_true", help="two cases, fewer rounds")
    args = ap.parse_args(argv)
    from vdla.compiler.compile_model import compile_model
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph import run_reference
    threads = [int(t) for t in args.threads.split(",")]
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'case':38s} {'thr':>3s} {'ours ms':>9s} {'ort ms':>9s} {'host ms':>9s} {'ratio':>6s}")
    for name, (op, shape, attrs, consts) in CASES.items():
        if args.quick and name not in QUICK:
            continue
        model = one_node_model(op, shape, attrs, {k: make(rng) for k, make in consts.items()})
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        compiled, imported = compile_model(model), import_onnx(model)

        def host_step():     # materialized, as a host step writes its output (Expand's numpy statement is a view)
            return [np.ascontiguousarray(v) for v in run_reference(imported, feeds).values()]
        for t in threads:
            row = timed_row(name, model, compiled, feeds, t, host_step, args.quick, args.repeat)
            if isinstance(row, str):
                print(row)
                return 1
            row["kernels"] = sorted({s.kind for s in compiled.plan.steps})
            rows.append(row)
            print(f"{name:38s} {t:3d} {row['ours_ms']:9.3f} {row['ort_ms']:9.3f} {row['host_ms']:9.3f} "
                  f"{row['ratio']:6.2f}", flush=True)
    geo = round(math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows)), 4)
    print(f"geomean ratio (ours/ort): {geo}")
    if args.json:
        print(json.dumps({"cases": rows, "geomean_ratio_vs_ort": geo}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
