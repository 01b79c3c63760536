"""`vdla run MODEL.vdla [--input NAME=FILE.npy ...] [--output DIR]`: run an artifact on the CPU.
Inputs not given are filled with seeded random values; --profile prints per-step times."""
from __future__ import annotations

import os
import time

import numpy as np


def add_parser(sub):
    p = sub.add_parser("run", help="run a .vdla artifact")
    p.add_argument("artifact")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input from a .npy file (repeatable); others are random")
    p.add_argument("--output", default=None, metavar="DIR", help="write outputs as DIR/NAME.npy")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.add_argument("--repeat", type=int, default=1, help="runs to time (median is printed)")
    p.add_argument("--profile", action="store_true", help="print per-step timing")
    p.add_argument("--threads", type=int, default=None, help="threads for parallel kernel loops")
    p.add_argument("--hw-config", default=None, help="check the artifact was built for this config")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def _random_input(spec: dict, rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(spec["dtype"])
    if dtype.kind == "f":
        return rng.standard_normal(spec["shape"]).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, spec["shape"]).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -128), min(info.max, 127) + 1, spec["shape"]).astype(dtype)


def run(args) -> int:
    from vdla.driver.executor import Executor
    hw = None
    if args.hw_config:
        from vdla.hw import load_config
        hw = load_config(args.hw_config)
    executor = Executor(args.artifact, hw_config=hw, threads=args.threads)
    plan = executor.artifact.plan
    given = {}
    for item in args.input:
        name, _, path = item.partition("=")
        if not path:
            raise ValueError(f"--input {item!r}: expected NAME=FILE.npy")
        given[name] = np.load(path)
    rng = np.random.default_rng(args.seed)
    feeds = {s["name"]: given.pop(s["name"]) if s["name"] in given else _random_input(s, rng)
             for s in plan["inputs"]}
    if given:
        raise ValueError(f"unknown inputs {sorted(given)}; the model's inputs are {list(feeds)}")
    times = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        outputs = executor.run(feeds, profile=args.profile)
        times.append(time.perf_counter() - start)
    for name, value in outputs.items():
        print(f"{name}: {value.dtype}{list(value.shape)} min {value.min():.6g} max {value.max():.6g} "
              f"mean {value.astype(np.float64).mean():.6g}")
        if args.output:
            os.makedirs(args.output, exist_ok=True)
            np.save(os.path.join(args.output, f"{name.replace('/', '_')}.npy"), value)
    print(f"latency: {np.median(times) * 1e3:.3f} ms (median of {len(times)})")
    if args.profile:
        total = sum(t.seconds for t in executor.last_timings) or 1.0
        for t in sorted(executor.last_timings, key=lambda t: -t.seconds):
            print(f"  {t.seconds * 1e3:9.3f} ms {100 * t.seconds / total:5.1f}%  {t.kind:<6} {t.op:<28} {t.name}")
    return 0
