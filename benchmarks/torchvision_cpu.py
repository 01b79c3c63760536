"""torchvision CNNs on the CPU: vdla's compiled models against onnxruntime, 1 and 2 threads.

The models of torchvision_int8.py (its exports: TorchScript, 224x224, random weights from
torch.manual_seed(0), made in an interpreter that has torch, --torch-python), compiled by
`compile_model(target="cpu")` and run by the deploy runtime's executor beside an onnxruntime
session of the same file in one process, their calls alternating (interleave.py); onnxruntime's
spinning is off as in e2e_cpu.py (ort_peer.py). Each run's output must match onnxruntime's
within 1e-4 of the output's scale. The four models of e2e_cpu.py are its own; these are the
families a user brings next: grouped convolutions (RegNet, ResNeXt), concatenations (DenseNet,
GoogLeNet, SqueezeNet), channel shuffles (ShuffleNetV2), squeeze-and-excitation (EfficientNet,
MobileNetV3).

Per model: vdla_ms_{1,2}t, ort_ms_{1,2}t, ratio_{1,2}t (ours / onnxruntime), compile_s,
max_rel_err; geomean_ratio_2t over the models. The last line with --json is one JSON object;
--results FILE also saves it with this host (README's span: benchmarks/results/torchvision_cpu.json).

    python benchmarks/torchvision_cpu.py --torch-python /path/to/torch-env/bin/python
        [--models densenet121,regnet_x_400mf] [--out DIR] [--repeat N] [--json] [--results FILE]
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time

import numpy as np

from interleave import interleaved_median_ms
from ort_peer import ort_session
from results_file import save
from torchvision_int8 import MODELS, SHAPE, export_missing, selected

MIN_TIME_S = 0.5
TOLERANCE = 1e-4


def measure(path: pathlib.Path, repeat: int) -> dict:
    import onnx

    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    model = onnx.load(str(path))
    start = time.perf_counter()
    artifact = compile_model(model, target="cpu")
    row = {"compile_s": round(time.perf_counter() - start, 2)}
    name = artifact.plan.inputs[0].name
    feeds = {name: np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)}
    errors = []
    for threads in (1, 2):
        executor, session = Executor(artifact, threads=threads), ort_session(model, threads)
        ours = executor.run(feeds)[artifact.plan.outputs[0].name]
        theirs = session.run(None, feeds)[0]
        errors.append(float(np.abs(ours - theirs).max() / max(float(np.abs(theirs).max()), 1e-30)))
        if errors[-1] > TOLERANCE:
            raise SystemExit(f"{path.stem}: our output differs from onnxruntime's by {errors[-1]:.2e} of its scale "
                             f"({threads} threads)")
        ours_ms, ort_ms = interleaved_median_ms([lambda: executor.run(feeds), lambda: session.run(None, feeds)],
                                                repeat, min_time=MIN_TIME_S)
        row.update({f"vdla_ms_{threads}t": round(ours_ms, 3), f"ort_ms_{threads}t": round(ort_ms, 3),
                    f"ratio_{threads}t": round(ours_ms / ort_ms, 3)})
    row["max_rel_err"] = max(errors)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch-python", help="an interpreter with torch and torchvision (for the exports)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--out", help="where the exports go and are reused from (default: a temporary folder)")
    ap.add_argument("--repeat", type=int, default=10, help="rounds of alternating calls, at least")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--results", help="also save the figures (JSON, with this host) to this file")
    args = ap.parse_args(argv)
    models, out = selected(ap, args)
    export_missing(ap, args, models, out)
    print(f"{'model':<20}{'vdla 1t':>9}{'ort 1t':>9}{'ratio':>7}{'vdla 2t':>10}{'ort 2t':>9}{'ratio':>7}"
          f"{'compile s':>11}   (ms, batch 1, 224x224)")
    figures = {}
    for name in models:
        f = figures[name] = measure(out / f"{name}.onnx", args.repeat)
        print(f"{name:<20}{f['vdla_ms_1t']:>9.2f}{f['ort_ms_1t']:>9.2f}{f['ratio_1t']:>7.2f}{f['vdla_ms_2t']:>10.2f}"
              f"{f['ort_ms_2t']:>9.2f}{f['ratio_2t']:>7.2f}{f['compile_s']:>11.1f}", flush=True)
    ratios = [f["ratio_2t"] for f in figures.values()]
    geomean = round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3)
    print(f"geomean ratio (ours / onnxruntime) with 2 threads: {geomean}")
    summary = {"models": figures, "geomean_ratio_2t": geomean}
    if args.results:
        save(args.results, summary)
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
