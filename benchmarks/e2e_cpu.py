"""End-to-end CPU latency: vdla-compiled ResNet-18 and MobileNetV2 (batch 1, fp32, 224x224)
against onnxruntime in the same process, with 1 and 2 threads, plus compile time; then two
transformers (tests/e2e/transformer_builders.py): ViT-Tiny (batch 1, 224x224, 12 layers) and
the BERT-style encoder at the builder's default small config (batch 1, 32 tokens, hidden 128,
2 layers, 2 heads; inputs input_ids and attention_mask from bert_feeds, half the tokens padded).

    python benchmarks/e2e_cpu.py [--repeat N] [--json] [--contended] [--results FILE]

With --json the last line is one JSON object (ratios are ours / onnxruntime at 2 threads:
resnet18_, mobilenetv2_, vit_tiny_ and bert_ratio_vs_ort). --results FILE also saves it with
this host (README's span: benchmarks/results/e2e_cpu.json).

--contended also measures all four contestants (ours and onnxruntime, 1 and 2 threads) while
another process spins on one core (a child started and stopped here, pinned to the last CPU
this process may use; this process stays free to move), as on a board that runs other work.
The last line is then always JSON, with contended_{ours,ort}_{1,2}t_ms, contended_2t_over_1t
(ours; below 1 means the second thread still pays), contended_ort_2t_over_1t and the same
figures without the busy core (uncontended_...), for MobileNetV2 unprefixed and for ResNet-18
prefixed resnet18_.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

from interleave import interleaved_median_ms
from ort_peer import ort_session
from results_file import save

ROOT = pathlib.Path(__file__).resolve().parents[1]
MIN_TIME_S = 0.5


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "e2e" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module      # transformer_builders imports model_builders by name
    spec.loader.exec_module(module)
    return module


def _builders():
    return _load("model_builders")


def _transformer_builders():
    _builders()
    return _load("transformer_builders")


@contextlib.contextmanager
def busy_core():
    """A child process spinning on the last CPU this process may use, for the block's duration.
    Yields that CPU's number (None where affinity cannot be set)."""
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        cpu = None
        if hasattr(os, "sched_setaffinity"):
            cpu = max(os.sched_getaffinity(0))
            os.sched_setaffinity(child.pid, {cpu})
        time.sleep(0.3)                      # let it start and settle on its core
        yield cpu
    finally:
        child.kill()
        child.wait()


def contended_figures(row: dict, runs: dict, repeat: int) -> dict:
    """ours and onnxruntime at 1 and 2 threads, interleaved, with one core busy; the same
    figures from `row` (measured without the busy core) beside them."""
    with busy_core() as cpu:
        ms = interleaved_median_ms([runs[k] for k in ("ours_1t", "ours_2t", "ort_1t", "ort_2t")], repeat)
    out = {"busy_cpu": cpu}
    for key, value in zip(("ours_1t", "ours_2t", "ort_1t", "ort_2t"), ms):
        out[f"contended_{key}_ms"] = round(value, 3)
    for t in (1, 2):
        out[f"uncontended_ours_{t}t_ms"] = row[f"vdla_ms_{t}t"]
        out[f"uncontended_ort_{t}t_ms"] = row[f"ort_ms_{t}t"]
    for phase in ("contended", "uncontended"):
        for who, tag in (("ours", ""), ("ort", "ort_")):
            two, one = out[f"{phase}_{who}_2t_ms"], out[f"{phase}_{who}_1t_ms"]
            out[f"{phase}_{tag}2t_over_1t"] = round(two / one, 3)
    return out


def bench_model(name: str, model, repeat: int, contended: bool = False, feeds: dict | None = None) -> dict:
    """feeds: the model's inputs by name (their shapes are compiled in: a model with symbolic
    dims needs them); None: one float32 standard-normal input of the model's declared shape."""
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor

    start = time.perf_counter()
    artifact = compile_model(model, input_shapes=None if feeds is None else
                             {k: list(np.shape(v)) for k, v in feeds.items()})
    compile_s = time.perf_counter() - start
    if feeds is None:
        spec = artifact.plan.inputs[0]
        feeds = {spec.name: np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)}
    kinds = [s.kind for s in artifact.plan.steps]
    row = {"model": name, "compile_s": round(compile_s, 2), "kernel_steps": kinds.count("kernel"),
           "host_steps": kinds.count("host"), "arena_bytes": artifact.plan.arena_bytes,
           "naive_bytes": artifact.plan.naive_bytes}
    runs = {}
    for threads in (1, 2):
        session = ort_session(model, threads)
        reference = session.run(None, feeds)[0]
        executor = Executor(artifact, threads=threads)
        ours = executor.run(feeds)[artifact.plan.outputs[0].name]
        run_ort, run_ours = (lambda s=session: s.run(None, feeds)), (lambda e=executor: e.run(feeds))
        runs[f"ort_{threads}t"], runs[f"ours_{threads}t"] = run_ort, run_ours
        # at least MIN_TIME_S of rounds: BERT's 0.4 ms runs need more than `repeat` for a stable median
        ort_ms, vdla_ms = interleaved_median_ms([run_ort, run_ours], repeat, min_time=MIN_TIME_S)
        row[f"ort_ms_{threads}t"] = round(ort_ms, 3)
        row[f"vdla_ms_{threads}t"] = round(vdla_ms, 3)
        row[f"max_abs_err_{threads}t"] = float(np.abs(ours - reference).max())
        row[f"ratio_{threads}t"] = round(row[f"vdla_ms_{threads}t"] / row[f"ort_ms_{threads}t"], 3)
    if contended:
        row["contended"] = contended_figures(row, runs, repeat)
    return row


def print_contended(rows: list) -> dict:
    """The side-by-side table of the busy-core figures; returns them flattened for the JSON
    line (MobileNetV2 unprefixed, other models prefixed with their name)."""
    print(f"\none core busy with another process (pinned to CPU {rows[0]['contended']['busy_cpu']}):")
    print(f"{'model':<12} {'':>12} {'ours 1t':>9} {'ours 2t':>9} {'2t/1t':>6}   "
          f"{'ort 1t':>8} {'ort 2t':>8} {'2t/1t':>6}")
    flat = {}
    for r in rows:
        c = r["contended"]
        for phase in ("uncontended", "contended"):
            print(f"{r['model']:<12} {phase:>12} {c[f'{phase}_ours_1t_ms']:>9.2f} "
                  f"{c[f'{phase}_ours_2t_ms']:>9.2f} {c[f'{phase}_2t_over_1t']:>6.2f}   "
                  f"{c[f'{phase}_ort_1t_ms']:>8.2f} {c[f'{phase}_ort_2t_ms']:>8.2f} "
                  f"{c[f'{phase}_ort_2t_over_1t']:>6.2f}")
        prefix = "" if r["model"] == "mobilenetv2" else f"{r['model']}_"
        flat.update({prefix + k: v for k, v in c.items() if k != "busy_cpu"})
    flat["busy_cpu"] = rows[0]["contended"]["busy_cpu"]
    return flat


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--contended", action="store_true",
                        help="also measure while another process spins on one core")
    parser.add_argument("--results", metavar="FILE", help="also save the figures there, with this host")
    args = parser.parse_args(argv)
    builders = _builders()
    transformers = _transformer_builders()
    rows = [bench_model("resnet18", builders.resnet18(), args.repeat, args.contended),
            bench_model("mobilenetv2", builders.mobilenetv2(), args.repeat, args.contended),
            bench_model("vit_tiny", transformers.vit_tiny(), args.repeat),
            bench_model("bert", transformers.bert_encoder(), args.repeat, feeds=transformers.bert_feeds())]
    print(f"{'model':<12} {'threads':>7} {'vdla ms':>10} {'ort ms':>10} {'ratio':>7}   compile s  steps k/h")
    for r in rows:
        for t in (1, 2):
            print(f"{r['model']:<12} {t:>7} {r[f'vdla_ms_{t}t']:>10.2f} {r[f'ort_ms_{t}t']:>10.2f} "
                  f"{r[f'ratio_{t}t']:>7.2f}   {r['compile_s']:>9.1f}  {r['kernel_steps']}/{r['host_steps']}")
    summary = {
        "resnet18_ratio_vs_ort": rows[0]["ratio_2t"],
        "mobilenetv2_ratio_vs_ort": rows[1]["ratio_2t"],
        "vit_tiny_ratio_vs_ort": rows[2]["ratio_2t"],
        "bert_ratio_vs_ort": rows[3]["ratio_2t"],
        "compile_s": max(r["compile_s"] for r in rows),
        "rows": rows,
    }
    if args.contended:
        summary.update(print_contended([r for r in rows if "contended" in r]))
    if args.json or args.contended:
        print(json.dumps(summary))
    if args.results:
        save(args.results, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
