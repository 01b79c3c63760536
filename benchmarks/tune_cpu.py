"""A model's CPU kernels (ResNet-18 or MobileNetV2, the test builders, 224x224, batch 1, fp32)
tuned on this host with a fixed trial budget per kernel, against the default schedules vdla
compiles without a tuning log.

Prints one row per distinct kernel: the nodes that share it, the default's and the tuned
schedule's milliseconds (the paired timing the search confirmed a record with; equal where
the default stayed), speedup, schedules measured, default and tuned knobs. Then the whole
model, compiled without and with the log and run through the executor in turns in this
process (median of rounds, the two taking turns to go first). Exits 1 if any record is
slower than its default (the tuner must never write one). With --json the last line is one JSON object: default_ms and
tuned_ms (the model), kernels_default_ms and kernels_tuned_ms (each kernel times its nodes),
trials (schedules measured), tune_wall_s, trials_per_kernel, jobs, threads, host, kernels.

    python benchmarks/tune_cpu.py [--model resnet18|mobilenetv2] [--trials 16] [--jobs N]
                                  [--threads N] [--repeat 20] [--log TUNING.json] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict

import numpy as np

from e2e_cpu import _builders as model_builders
from results_file import host_label, save


def tune(model, trials: int, jobs: int, threads, log_path: str, progress: bool) -> dict:
    from vdla.compiler.tune import tune_cpu_model
    summary = tune_cpu_model(model, "cpu", threads, trials=trials, jobs=jobs, output=log_path, progress=progress)
    rows = []
    for r in summary.results:
        rec = r.record
        rows.append({"kernel": r.kernel.name, "nodes": len(r.kernel.nodes),
                     "default_ms": rec.default_ms if rec else None, "tuned_ms": rec.ms if rec else None,
                     "trials": rec.trials if rec else 0, "failed": len(r.failed), "mismatched": len(r.mismatched),
                     "problem": r.problem, "default_knobs": asdict(rec.default_knobs) if rec else None,
                     "tuned_knobs": asdict(rec.knobs) if rec else None})
    done = [r for r in rows if r["tuned_ms"] is not None]
    t = summary.target
    return {"kernels_default_ms": round(sum(r["default_ms"] * r["nodes"] for r in done), 4),
            "kernels_tuned_ms": round(sum(r["tuned_ms"] * r["nodes"] for r in done), 4),
            "trials": summary.trials, "tune_wall_s": round(summary.seconds, 1), "trials_per_kernel": trials,
            "jobs": jobs, "threads": t.threads, "host": f"{t.triple} {t.cpu}", "kernels": rows}


def model_ms(model, log_path: str, threads, repeat: int) -> tuple[float, float, bool]:
    """(default ms, tuned ms, same output) of the whole model, run in turns."""
    from vdla.compiler.compile_model import compile_model
    from vdla.compiler.tune import load_tuning
    from vdla.driver.executor import Executor
    plain = compile_model(model, "cpu", threads=threads)
    tuned = compile_model(model, "cpu", threads=threads, tuning=load_tuning(log_path))
    spec = plain.plan.inputs[0]
    x = {spec.name: np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)}
    runs = [Executor(plain), Executor(tuned)]
    out = [r.run(x) for r in runs]
    same = all(np.allclose(a, out[1][k], rtol=1e-4, atol=1e-4) for k, a in out[0].items())
    return (*_alternating_median_ms([lambda: runs[0].run(x), lambda: runs[1].run(x)], repeat, min_time=3.0), same)


def _alternating_median_ms(fns, repeat: int, min_time: float) -> list[float]:
    """Median ms of each of two functions run in turns, the first one first in even rounds and
    second in odd ones (on a loaded host the place in a round changes the time), for at least
    `repeat` rounds and `min_time` seconds."""
    for fn in fns:
        fn()
    times = [[], []]
    end, rounds = time.perf_counter() + min_time, 0
    while rounds < repeat or time.perf_counter() < end:
        for i in ((0, 1) if rounds % 2 == 0 else (1, 0)):
            start = time.perf_counter()
            fns[i]()
            times[i].append(time.perf_counter() - start)
        rounds += 1
    return [statistics.median(t) * 1e3 for t in times]


def _knobs(k: dict | None) -> str:
    return "-" if k is None else " ".join(f"{n}={v}" for n, v in k.items())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=("resnet18", "mobilenetv2"), default="resnet18")
    ap.add_argument("--trials", type=int, default=16, help="schedules measured per kernel (the default included)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compiling processes")
    ap.add_argument("--threads", type=int, default=None, help="threads the kernels run with (default: every core)")
    ap.add_argument("--repeat", type=int, default=20, help="rounds of the whole-model timing")
    ap.add_argument("--log", default=None, metavar="TUNING.json", help="keep the tuning log here (default: a "
                                                                        "temporary file)")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--results", metavar="FILE", help="also save the figures there, with this host (README's span: "
                                                       "benchmarks/results/tune_cpu_MODEL.json)")
    args = ap.parse_args(argv)
    model = getattr(model_builders(), args.model)()
    with tempfile.TemporaryDirectory() as d:
        log_path = args.log or os.path.join(d, "tuning.json")
        f = tune(model, args.trials, args.jobs, args.threads, log_path, progress=sys.stderr.isatty())
        default, tuned, same = model_ms(model, log_path, args.threads, args.repeat)
    f.update(model=args.model, default_ms=round(default, 3), tuned_ms=round(tuned, 3), same_output=same)
    if args.results:
        save(args.results, {**f, "host": f"{host_label()} ({f['host']})"})
    width = max(len(r["kernel"]) for r in f["kernels"])
    print(f"{'kernel':<{width}} {'nodes':>5} {'default ms':>10} {'tuned ms':>9} {'speedup':>8} {'trials':>6}  "
          f"{'default knobs':<42} tuned knobs")
    for r in f["kernels"]:
        if r["tuned_ms"] is None:
            print(f"{r['kernel']:<{width}} {r['nodes']:>5}  not tuned: {r['problem']}")
            continue
        tuned_knobs = "(default)" if r["tuned_knobs"] == r["default_knobs"] else _knobs(r["tuned_knobs"])
        print(f"{r['kernel']:<{width}} {r['nodes']:>5} {r['default_ms']:>10.4f} {r['tuned_ms']:>9.4f} "
              f"{r['default_ms'] / r['tuned_ms']:>7.3f}x {r['trials']:>6}  {_knobs(r['default_knobs']):<42} "
              f"{tuned_knobs}")
    print(f"{'kernels (kernel x nodes)':<{width}} {'':>5} {f['kernels_default_ms']:>10.4f} "
          f"{f['kernels_tuned_ms']:>9.4f} {f['kernels_default_ms'] / f['kernels_tuned_ms']:>7.3f}x {f['trials']:>6}")
    print(f"{args.model} end to end (executor, median of alternating rounds): default {default:.3f} ms, tuned "
          f"{tuned:.3f} ms ({default / tuned:.3f}x), outputs {'equal' if same else 'DIFFER'}; {f['host']}, "
          f"{f['threads']} thread(s); {args.trials} trials per kernel compiled on {args.jobs} process(es) and timed "
          f"one at a time, in {f['tune_wall_s']} s")
    worse = [r["kernel"] for r in f["kernels"] if r["tuned_ms"] is not None and r["tuned_ms"] > r["default_ms"]]
    if worse:
        print(f"error: a record slower than its default on {', '.join(worse)}", file=sys.stderr)
    if not same:
        print("error: the tuned model computes another output than the default one", file=sys.stderr)
    if args.json:
        print(json.dumps(f))
    return 1 if worse or not same else 0


if __name__ == "__main__":
    sys.exit(main())
