"""The GPU path's two chosen constants, measured: when Winograd pays for a 3x3 conv
(topi.gpu.winograd.WINOGRAD_FLOPS_PER_LAUNCH) and when a reduction's threads share an output
(topi.gpu.cross_thread.FEW_OUTPUTS).

    python benchmarks/gpu_constants.py --prepare DIR      # compile every variant (no GPU needed)
    python benchmarks/gpu_constants.py --run DIR [--json] # time them on the GPU
    python benchmarks/gpu_constants.py [--json]           # both, in one process

Each case is a one-node model (Conv+bias+Relu, GlobalAveragePool, Softmax, Gemm) compiled with
`--target cuda` two ways: Winograd on and off for the convs; for the reductions, the cross-thread
schedule forced on and off while compiling (`sharing`). Compiling
apart from timing lets the GPU machine spend its time on the GPU alone.

Timing: each variant's kernels are launched on device buffers allocated once (random inputs), as
the executor launches them (one stream, cuda-bindings' launch call from Python, so the launch cost
the constants weigh is in the figure); `--batch` calls back to back, then a synchronize; the
median over `--repeat` such batches, per call, in microseconds. Variants of one case alternate.

The decision each constant makes is printed beside the measurement: for Winograd the FLOPs it saves
(direct - Winograd) and the break-even launch cost those savings imply when it wins; for the
reductions, which schedule is faster at each (outputs, reduction length). With --json the last
line is one JSON object: {"device", "arch", "winograd": [...], "cross_thread": [...]}.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import pathlib
import statistics
import sys
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
# 3x3 stride-1 convs: ResNet-18's four stages at batch 1 and 16, and narrower ones where the
# FLOPs saved are few enough for a launch to matter. (batch, channels in = out, height = width)
CONVS = [(1, 64, 56), (1, 128, 28), (1, 256, 14), (1, 512, 7), (16, 64, 56), (16, 128, 28), (16, 256, 14),
         (16, 512, 7), (1, 16, 56), (1, 32, 28), (1, 32, 14), (1, 64, 7), (1, 16, 14), (1, 8, 8),
         # between the first measurements' break-even bounds (8 and 125 MFLOP saved)
         (1, 24, 56), (1, 48, 28), (1, 96, 14), (1, 128, 7), (1, 256, 7), (1, 32, 56), (1, 64, 28), (1, 128, 14),
         (4, 32, 28), (1, 40, 56), (1, 80, 28), (1, 160, 14), (1, 384, 7), (1, 48, 56), (1, 96, 28), (1, 192, 14)]
# (op, shape): outputs and reduction length spread over the threshold (16384 outputs, 32 long)
REDUCTIONS = [
    ("GlobalAveragePool", (1, 512, 7, 7)), ("GlobalAveragePool", (4, 512, 7, 7)),
    ("GlobalAveragePool", (16, 512, 7, 7)), ("GlobalAveragePool", (64, 512, 7, 7)),
    ("GlobalAveragePool", (1, 64, 56, 56)), ("GlobalAveragePool", (16, 256, 14, 14)),
    ("GlobalAveragePool", (64, 256, 14, 14)), ("GlobalAveragePool", (1, 1280, 7, 7)),
    ("Softmax", (1, 1000)), ("Softmax", (16, 1000)), ("Softmax", (256, 1000)), ("Softmax", (4096, 1000)),
    ("Softmax", (32768, 1000)), ("Softmax", (1024, 64)), ("Softmax", (65536, 64)),
    ("Gemm", (1, 512, 1000)), ("Gemm", (16, 512, 1000)), ("Gemm", (1, 1280, 1000)), ("Gemm", (64, 512, 1000)),
    ("Gemm", (1, 4096, 4096)),
    # many outputs with short reductions, where one thread per output may be enough
    ("GlobalAveragePool", (256, 1024, 7, 7)), ("GlobalAveragePool", (64, 2048, 3, 3)),
    ("GlobalAveragePool", (512, 512, 2, 16)), ("GlobalAveragePool", (1024, 1024, 4, 8)),
    ("Softmax", (262144, 64)), ("Softmax", (1048576, 32)), ("Softmax", (131072, 256)),
    ("Gemm", (256, 512, 1000)), ("Gemm", (1024, 256, 1024)), ("Gemm", (4096, 64, 256)),
]


def _model(nodes, x_shape, inits):
    graph = helper.make_graph(nodes, "case", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=9)


def conv_model(n, c, h, seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((c, c, 3, 3)) * np.sqrt(2 / (9 * c))).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32) * 0.1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    return _model(nodes, [n, c, h, h], [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])


def reduction_model(op, shape, seed=0):
    if op == "Gemm":
        m, k, n = shape
        w = (np.random.default_rng(seed).standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)
        return _model([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], [m, k],
                      [numpy_helper.from_array(w, "w")]), m * n, k
    attrs = {"axis": -1} if op == "Softmax" else {}
    outputs = math.prod(shape[:-1]) if op == "Softmax" else shape[0] * shape[1]
    length = shape[-1] if op == "Softmax" else math.prod(shape[2:])
    return _model([helper.make_node(op, ["x"], ["y"], **attrs)], list(shape), []), outputs, length


@contextlib.contextmanager
def sharing(on: bool):
    """Every reduction's threads share its outputs (on) or none does, while compiling: FEW_OUTPUTS
    past every case or 0, and the row-factored dense's own choice (topi.gpu.dense) forced alike."""
    from vdla.compiler.topi.gpu import cross_thread
    dense = importlib.import_module("vdla.compiler.topi.gpu.dense")    # the package's `dense` is a function
    saved = cross_thread.FEW_OUTPUTS, dense.row_factored_sharing_pays
    cross_thread.FEW_OUTPUTS = 1 << 62 if on else 0
    dense.row_factored_sharing_pays = lambda reduce_len: on and saved[1](reduce_len)
    try:
        yield
    finally:
        cross_thread.FEW_OUTPUTS, dense.row_factored_sharing_pays = saved


def _programs(artifact):
    steps = artifact.plan.steps
    assert all(s.kind != "host" for s in steps), f"a host step: {[s for s in steps if s.kind == 'host']}"
    return artifact.header.get("gpu_programs", [])


def prepare(arch: str) -> dict:
    """Every case's variants compiled: {"winograd": [...], "cross_thread": [...]}, programs as dicts."""
    from vdla.compiler.compile_cuda import compile_for_cuda
    from vdla.compiler.topi.gpu.winograd import conv_flops, winograd_pays
    from vdla.compiler.topi.gpu.cross_thread import cross_thread_pays
    out = {"arch": arch, "winograd": [], "cross_thread": []}
    for n, c, h in CONVS:
        model = conv_model(n, c, h)
        direct, wino = conv_flops(n, c, c, h, h)
        variants = {"direct": _programs(compile_for_cuda(model, arch=arch, winograd=False))}
        with_wino = _programs(compile_for_cuda(model, arch=arch, winograd=True))
        if len(with_wino[0]["kernels"]) == 1:      # not chosen: compile it anyway (threshold 0)
            from vdla.compiler.topi.gpu import winograd
            saved, winograd.WINOGRAD_FLOPS_PER_LAUNCH = winograd.WINOGRAD_FLOPS_PER_LAUNCH, 0.0
            try:
                with_wino = _programs(compile_for_cuda(model, arch=arch, winograd=True))
            finally:
                winograd.WINOGRAD_FLOPS_PER_LAUNCH = saved
        variants["winograd"] = with_wino
        out["winograd"].append({"case": f"conv3x3 n{n} c{c} {h}x{h}", "shape": [n, c, h], "direct_flops": direct,
                                "winograd_flops": wino, "chosen_now": "winograd" if winograd_pays(n, c, c, h, h)
                                else "direct", "variants": variants})
    for op, shape in REDUCTIONS:
        model, outputs, length = reduction_model(op, shape)
        with sharing(False):
            per_thread = _programs(compile_for_cuda(model, arch=arch))
        with sharing(True):
            shared = _programs(compile_for_cuda(model, arch=arch))
        out["cross_thread"].append({"case": f"{op} {'x'.join(map(str, shape))}", "outputs": outputs,
                                    "reduce": length, "chosen_now": "cross_thread"
                                    if cross_thread_pays(outputs, length) else "per_thread",
                                    "variants": {"per_thread": per_thread, "cross_thread": shared}})
    return out


class Loaded:
    """A variant's programs on the device (GpuRunner: buffers allocated once), their buffers filled
    with random data once; calling it queues every kernel."""

    def __init__(self, device, docs, rng):
        from vdla.driver.gpu_program import GpuProgram, GpuRunner
        self.runners = [GpuRunner(device, GpuProgram.from_dict(doc)) for doc in docs]
        for runner in self.runners:
            for buf, (_, shape, dtype) in zip(runner.buffers, runner.program.buffers):
                device.write(buf, rng.standard_normal(max(1, math.prod(shape))).astype(dtype))

    def __call__(self):
        for runner in self.runners:
            runner.launch()


def time_variants(device, variants: dict, repeat: int, batch: int) -> dict:
    rng = np.random.default_rng(0)
    loaded = {k: Loaded(device, docs, rng) for k, docs in variants.items()}
    for run in loaded.values():      # warm: the driver's PTX compile, caches
        for _ in range(3):
            run()
    device.synchronize()
    samples = {k: [] for k in loaded}
    for _ in range(repeat):
        for key, run in loaded.items():
            start = time.perf_counter()
            for _ in range(batch):
                run()
            device.synchronize()
            samples[key].append((time.perf_counter() - start) / batch * 1e6)
    return {k: round(statistics.median(v), 2) for k, v in samples.items()}


def measure(device, prepared: dict, repeat: int, batch: int) -> dict:
    out = {"device": device.name, "arch": device.arch, "winograd": [], "cross_thread": []}
    for row in prepared["winograd"]:
        us = time_variants(device, row["variants"], repeat, batch)
        saved = row["direct_flops"] - row["winograd_flops"]
        faster = us["winograd"] < us["direct"]
        out["winograd"].append({k: v for k, v in row.items() if k != "variants"} | {
            "direct_us": us["direct"], "winograd_us": us["winograd"], "faster": "winograd" if faster else "direct",
            "launch_kernels": {k: sum(len(p["kernels"]) for p in v) for k, v in row["variants"].items()}})
        print(f"{row['case']:<28} direct {us['direct']:9.1f} us  winograd {us['winograd']:9.1f} us  "
              f"saves {saved / 1e6:9.1f} MFLOP  faster: {'winograd' if faster else 'direct':<8} "
              f"(now: {row['chosen_now']})", flush=True)
    for row in prepared["cross_thread"]:
        us = time_variants(device, row["variants"], repeat, batch)
        faster = "cross_thread" if us["cross_thread"] < us["per_thread"] else "per_thread"
        out["cross_thread"].append({k: v for k, v in row.items() if k != "variants"} | {
            "per_thread_us": us["per_thread"], "cross_thread_us": us["cross_thread"], "faster": faster})
        print(f"{row['case']:<28} outputs {row['outputs']:>8} reduce {row['reduce']:>6}  per-thread "
              f"{us['per_thread']:9.1f} us  cross-thread {us['cross_thread']:9.1f} us  faster: {faster:<12} "
              f"(now: {row['chosen_now']})", flush=True)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", metavar="DIR", help="compile only, into DIR/programs.json")
    parser.add_argument("--run", metavar="DIR", help="time DIR/programs.json on the GPU")
    parser.add_argument("--arch", default=None, help="PTX target for --prepare (default: the GPU's, else sm_80)")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--batch", type=int, default=20, help="calls between synchronizes")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    device = None
    if not args.prepare:
        from vdla.driver.device import DeviceError
        from vdla.driver.devices.cuda import CudaDevice
        try:
            device = CudaDevice()
        except DeviceError as exc:
            print(f"gpu_constants: {exc}", file=sys.stderr)
            return 2
    if args.run:
        prepared = json.loads((pathlib.Path(args.run) / "programs.json").read_text())
    else:
        from vdla.driver import gpu_limits as limits
        prepared = prepare(args.arch or (device.arch if device and device.arch in limits.ARCHS
                                          else limits.DEFAULT_ARCH))
        if args.prepare:
            folder = pathlib.Path(args.prepare)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "programs.json").write_text(json.dumps(prepared))
            print(f"{len(prepared['winograd'])} conv and {len(prepared['cross_thread'])} reduction cases "
                  f"compiled for {prepared['arch']} into {folder / 'programs.json'}")
            return 0
    result = measure(device, prepared, args.repeat, args.batch)
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
