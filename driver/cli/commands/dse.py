"""`vdla dse --model M.onnx --sweep SWEEP.json -o DIR`: design-space exploration. For every
configuration of the sweep: validate it, compile the model for it, simulate (cycles, GEMM
utilization, ms at its clock), synthesize the RTL with Yosys (LUT, FF, DSP, BRAM36, URAM; which
FPGA parts it fits; a sweep naming its board's "part" is mapped with that part's flow and
answers with its fastest point that fits it); then write DIR/dse.csv, DIR/dse.json and
DIR/pareto.png (latency vs LUT, DSP, BRAM, and URAM where used). Results are cached in
DIR/cache by config hash, each point as it finishes, so a rerun (after a change, or an
interrupted run) only computes what is missing; a second run on the same DIR is refused while
the first holds DIR/dse.lock. Runs on local processes (--workers), or on a Ray cluster with
--ray ADDRESS ("local" starts one here; needs pip install 'vdla[ray]'). The sweep format:
vdla.compiler.dse.sweep."""
from __future__ import annotations

import json

from ..options import OptionError


def add_parser(sub):
    p = sub.add_parser("dse", help="design-space exploration: cycles and FPGA resources over a sweep of configs")
    p.add_argument("--model", required=True, help="ONNX model file")
    p.add_argument("--sweep", required=True, metavar="SWEEP.json",
                   help='configurations: {"base": "pynq", "grid": {"LOG_BLOCK": [3, 4, 5]}, "points": [{...}]}')
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the table, plots and cache")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help='run the points on the Ray cluster at ADDRESS ("local": a Ray instance on this machine)')
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: the CPU cores)")
    p.add_argument("--calibrate", default=None, metavar="CALIB.npz",
                   help="calibration samples, one array per model input named like the input, first axis = "
                        "samples (as vdla compile takes them); default: seeded random samples")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix a symbolic input shape (repeatable)")
    p.add_argument("--no-synth", action="store_true", help="leave synthesis out: cycles only")
    p.add_argument("--synth-timeout", type=float, default=1800.0, help="seconds before one Yosys run is stopped")
    p.add_argument("--no-cache", action="store_true", help="recompute every point (the cache is still written)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random calibration and input samples")
    p.add_argument("--json", action="store_true",
                   help="last line: one JSON object with the points' figures and the Pareto ids")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (there is none where stderr is not a terminal)")
    return p


def run(args) -> int:
    from vdla.compiler.dse import explore, load_sweep, make_pool   # lazy: the runtime needs no compiler
    from .compile import _shape_arg
    if args.workers is not None and args.workers < 1:
        raise OptionError(f"--workers {args.workers}: expected at least 1")
    if args.ray and args.workers:
        raise OptionError("--workers sizes the local pool; with --ray the cluster's CPUs do the work")
    sweep = load_sweep(args.sweep)   # before any work: a bad sweep file should not wait for a pool
    calibration = None
    if args.calibrate:
        import numpy as np
        with np.load(args.calibrate) as data:
            calibration = {k: data[k] for k in data.files}
    shapes = dict(_shape_arg(s) for s in args.input_shape)
    kwargs = {"synthesizer": None} if args.no_synth else {}
    if args.no_progress:
        kwargs["progress"] = False
    with make_pool(args.ray, args.workers) as pool:
        result = explore(args.model, sweep, args.output, pool=pool, calibration=calibration,
                         input_shapes=shapes or None, synth_timeout=args.synth_timeout, seed=args.seed,
                         use_cache=not args.no_cache, **kwargs)
    print("\n".join(result.summary_lines()))
    if args.json:
        keep = ("id", "label", "status", "cycles", "ms", "lut", "ff", "dsp", "bram36", "fits", "pareto")
        points = [{**{k: r.get(k) for k in keep}, "config": {k: v for k, v in r["config"].items() if k != "timing"}}
                  for r in result.rows]
        print(json.dumps({"points": points, "pareto": result.pareto}))
    return 0 if any(r["status"] == "ok" for r in result.rows) else 1
