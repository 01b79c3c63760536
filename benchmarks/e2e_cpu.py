"""End-to-end CPU latency: vdla-compiled ResNet-18 and MobileNetV2 (batch 1, fp32, 224x224)
against onnxruntime in the same process, with 1 and 2 threads, plus compile time.

    python benchmarks/e2e_cpu.py [--repeat N] [--json]

With --json the last line is one JSON object (ratios are ours / onnxruntime at 2 threads).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import sys
import time

import numpy as np

from interleave import interleaved_median_ms
from ort_peer import ort_session

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _builders():
    spec = importlib.util.spec_from_file_location("model_builders",
                                                  ROOT / "tests" / "e2e" / "model_builders.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_model(name: str, model, repeat: int) -> dict:
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor

    start = time.perf_counter()
    artifact = compile_model(model)
    compile_s = time.perf_counter() - start
    spec = artifact.plan["inputs"][0]
    x = np.random.default_rng(0).standard_normal(spec["shape"]).astype(np.float32)
    kinds = [s["kind"] for s in artifact.plan["steps"]]
    row = {"model": name, "compile_s": round(compile_s, 2), "kernel_steps": kinds.count("kernel"),
           "host_steps": kinds.count("host"), "arena_bytes": artifact.plan["arena_bytes"],
           "naive_bytes": artifact.plan["naive_bytes"]}
    for threads in (1, 2):
        session = ort_session(model, threads)
        feeds = {spec["name"]: x}
        reference = session.run(None, feeds)[0]
        executor = Executor(artifact, threads=threads)
        ours = executor.run(feeds)[artifact.plan["outputs"][0]["name"]]
        ort_ms, vdla_ms = interleaved_median_ms(
            [lambda: session.run(None, feeds), lambda: executor.run(feeds)], repeat)
        row[f"ort_ms_{threads}t"] = round(ort_ms, 3)
        row[f"vdla_ms_{threads}t"] = round(vdla_ms, 3)
        row[f"max_abs_err_{threads}t"] = float(np.abs(ours - reference).max())
        row[f"ratio_{threads}t"] = round(row[f"vdla_ms_{threads}t"] / row[f"ort_ms_{threads}t"], 3)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    builders = _builders()
    rows = [bench_model("resnet18", builders.resnet18(), args.repeat),
            bench_model("mobilenetv2", builders.mobilenetv2(), args.repeat)]
    print(f"{'model':<12} {'threads':>7} {'vdla ms':>10} {'ort ms':>10} {'ratio':>7}   compile s  steps k/h")
    for r in rows:
        for t in (1, 2):
            print(f"{r['model']:<12} {t:>7} {r[f'vdla_ms_{t}t']:>10.2f} {r[f'ort_ms_{t}t']:>10.2f} "
                  f"{r[f'ratio_{t}t']:>7.2f}   {r['compile_s']:>9.1f}  {r['kernel_steps']}/{r['host_steps']}")
    summary = {
        "resnet18_ratio_vs_ort": rows[0]["ratio_2t"],
        "mobilenetv2_ratio_vs_ort": rows[1]["ratio_2t"],
        "compile_s": max(r["compile_s"] for r in rows),
        "rows": rows,
    }
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
