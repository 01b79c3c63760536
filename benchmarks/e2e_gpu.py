"""End-to-end GPU latency: ResNet-18 and MobileNetV2 (fp32, 224x224, batch 1 and 16) compiled
with `--target cuda` and run by the executor on a CUDA GPU, against two GPU peers in the same
run: onnxruntime's CUDA execution provider and PyTorch eager (benchmarks/torch_peer.py).

    python benchmarks/e2e_gpu.py [--batches 1,16] [--repeat N] [--warmup N] [--device N] [--json]

Before anything is timed, every contestant's output is compared with onnxruntime on the CPU (the
reference); one that disagrees by more than TOLERANCE is not timed and the run exits 1. Timing:
each call host to host (the input copied to the GPU, the output copied back, which waits for
the GPU), the contestants called in turn, `--warmup` calls each first (cuDNN's algorithm
searches happen there), then the median of `--repeat` calls. fp32 throughout: TF32 is off in
both peers (onnxruntime's use_tf32=0; torch_peer.py for PyTorch).

Needs an NVIDIA GPU with its driver and the gpu extra (pip install -e '.[gpu]'); without one it
says so and exits 2. A peer that cannot run here (onnxruntime without its CUDA provider --
the onnxruntime-gpu package has it --, no PyTorch, no CUDA in PyTorch) leaves its figures null,
with the reason under peer_missing. With --json the last line is one JSON object:
  resnet18_ratio_vs_ort, mobilenetv2_ratio_vs_ort   vdla ms / onnxruntime-CUDA ms at batch 1
  {case}_ratio_vs_ort, {case}_ratio_vs_torch        for every case: the model at batch 1, and
                                                    {model}_b{N} at batch N (resnet18_b16, ...)
  {case}_ms, {case}_ort_ms, {case}_torch_ms, {case}_max_abs_err (vdla vs the CPU reference),
  {case}_compile_s, {case}_gpu_steps, {case}_host_steps, {case}_kernels
  {case}_winograd_convs, {case}_direct_ms (the same compile with every conv direct, when some
  run by Winograd), {case}_winograd_speedup (direct ms / vdla ms): what settles
  topi.gpu.winograd.WINOGRAD_FLOPS_PER_LAUNCH, a guess until measured
  device, arch, batches, image, repeat, warmup, peer_missing {peer: why}, errors [...]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import sys
import time
from dataclasses import dataclass

import numpy as np

from interleave import interleaved_median_ms
from ort_peer import ort_session
from torch_peer import PeerUnavailable, TorchEager

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ("resnet18", "mobilenetv2")
# Largest |ours - reference| allowed, relative to the reference's largest |value|: fp32 kernels
# that sum in another order than onnxruntime's differ by ~1e-5 of it through ResNet-18.
TOLERANCE = 2e-3


def model_builders():
    spec = importlib.util.spec_from_file_location("model_builders", ROOT / "tests" / "e2e" / "model_builders.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def arch_for(device) -> str:
    """The newest PTX target vdla emits that the device runs."""
    from vdla.driver import gpu_limits as limits
    arch = limits.newest_arch_for(device.arch)
    if arch is None:
        raise SystemExit(f"the GPU is {device.arch}; vdla emits PTX for {', '.join(limits.ARCHS)} only")
    return arch


# -- the peers -------------------------------------------------------------------------------

@dataclass
class Peer:
    key: str                 # in the JSON keys: {case}_{key}_ms, {case}_ratio_vs_{key}
    label: str
    open: object             # (onnx model, CUDA ordinal) -> callable(feeds) -> [outputs]; PeerUnavailable


def open_ort_cuda(model, ordinal: int):
    import onnxruntime
    available = onnxruntime.get_available_providers()
    if "CUDAExecutionProvider" not in available:
        raise PeerUnavailable(f"onnxruntime {onnxruntime.__version__} has no CUDAExecutionProvider (it has "
                              f"{', '.join(available)}); the onnxruntime-gpu package brings it")
    options = {"device_id": ordinal, "use_tf32": 0}
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=[("CUDAExecutionProvider", options), "CPUExecutionProvider"])
    if session.get_providers()[0] != "CUDAExecutionProvider":   # onnxruntime falls back with a warning only
        raise PeerUnavailable(f"onnxruntime {onnxruntime.__version__} could not start its CUDA provider (its "
                              "CUDA or cuDNN libraries are missing?) and fell back to the CPU")
    return lambda feeds: session.run(None, feeds)


def open_torch(model, ordinal: int):
    run = TorchEager(model, f"cuda:{ordinal}")
    return lambda feeds: run(feeds)


PEERS = (Peer("ort", "onnxruntime CUDA EP", open_ort_cuda), Peer("torch", "PyTorch eager", open_torch))


# -- one case --------------------------------------------------------------------------------

def case_name(model: str, batch: int) -> str:
    return model if batch == 1 else f"{model}_b{batch}"


def bench_case(case: str, model, device, ordinal: int, peers, args, missing: dict, errors: list) -> dict:
    from vdla.compiler.compile_cuda import compile_for_cuda
    from vdla.driver.executor import Executor
    out = {f"{case}_{k}": None for k in ["ms", "max_abs_err", "direct_ms", "winograd_speedup"]
           + [f"{p.key}_ms" for p in peers] + [f"ratio_vs_{p.key}" for p in peers]}
    start = time.perf_counter()
    artifact = compile_for_cuda(model, arch=arch_for(device))
    kinds = [s.kind for s in artifact.plan.steps]
    winograd = sum(any(a.endswith("@winograd_gpu") for a in getattr(s, "args", ())) for s in artifact.plan.steps)
    out.update({f"{case}_compile_s": round(time.perf_counter() - start, 2), f"{case}_gpu_steps": kinds.count("gpu"),
                f"{case}_host_steps": kinds.count("host"), f"{case}_winograd_convs": winograd,
                f"{case}_kernels": sum(len(p["kernels"]) for p in artifact.header.get("gpu_programs", []))})
    spec, result = artifact.plan.inputs[0], artifact.plan.outputs[0].name
    feeds = {spec.name: np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)}
    reference = ort_session(model, args.cpu_threads).run(None, feeds)[0]
    bound = TOLERANCE * max(1.0, float(np.abs(reference).max()))
    executor = Executor(artifact, device=device)
    contestants = {"vdla": lambda: executor.run(feeds)[result]}
    if winograd:               # the same model with every conv direct: does Winograd pay here?
        direct = Executor(compile_for_cuda(model, arch=arch_for(device), winograd=False), device=device)
        contestants["direct"] = lambda: direct.run(feeds)[result]
    for peer in peers:
        try:
            run = peer.open(model, ordinal)
        except PeerUnavailable as why:
            missing.setdefault(peer.key, str(why))
            continue
        except Exception as exc:   # a peer's own failure on this model: its figures stay null
            missing.setdefault(peer.key, f"{case}: {type(exc).__name__}: {exc}")
            continue
        contestants[peer.key] = lambda run=run: run(feeds)[0]
    for key in list(contestants):
        err = float(np.abs(contestants[key]() - reference).max())
        if key == "vdla":
            out[f"{case}_max_abs_err"] = err
        if not err <= bound:           # NaN fails too
            what = f"{case}: {key}'s output differs from onnxruntime CPU's by {err:.3g} (allowed {bound:.3g})"
            if key in ("vdla", "direct"):
                errors.append(what)
                return out             # a wrong answer is not timed
            missing.setdefault(key, what)
            del contestants[key]
    times = dict(zip(contestants, interleaved_median_ms(list(contestants.values()), args.repeat, args.warmup)))
    out[f"{case}_ms"] = round(times["vdla"], 3)
    if "direct" in times:
        out[f"{case}_direct_ms"] = round(times.pop("direct"), 3)
        out[f"{case}_winograd_speedup"] = round(out[f"{case}_direct_ms"] / times["vdla"], 3)
    for key in times:
        if key != "vdla":
            out[f"{case}_{key}_ms"] = round(times[key], 3)
            out[f"{case}_ratio_vs_{key}"] = round(times["vdla"] / times[key], 3)
    return out


# -- the run ---------------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,16", help="comma-separated batch sizes (default 1,16)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--image", type=int, default=224, help="input height and width")
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per contestant (the median is kept)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls per contestant first")
    parser.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    parser.add_argument("--cpu-threads", type=int, default=os.cpu_count() or 1,
                        help="threads of the onnxruntime CPU session that computes the reference outputs")
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    args = parser.parse_args(argv)
    try:
        args.batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error(f"--batches: expected comma-separated integers, got {args.batches!r}")
    args.models = args.models.split(",")
    unknown = [m for m in args.models if m not in MODELS]
    if unknown or any(b < 1 for b in args.batches) or args.repeat < 1 or args.warmup < 0:
        parser.error(f"unknown models {unknown}" if unknown else "batches and --repeat must be >= 1, --warmup >= 0")
    return args


def open_cuda(ordinal: int):
    from vdla.driver.devices.cuda import CudaDevice
    return CudaDevice(ordinal)


def print_table(out: dict, cases: list, peers) -> None:
    head = f"{'case':<16} {'vdla ms':>9}" + "".join(f" {p.key + ' ms':>9} {'vs ' + p.key:>8}" for p in peers)
    print(head + f" {'direct ms':>9} {'max err':>9} {'compile s':>9} gpu/host steps, Winograd convs")
    fmt = lambda v, spec: format(v, spec) if v is not None else format("-", spec.rstrip(".23ef"))  # noqa: E731
    for case in cases:
        row = f"{case:<16} {fmt(out[f'{case}_ms'], '>9.2f')}"
        row += "".join(f" {fmt(out[f'{case}_{p.key}_ms'], '>9.2f')} {fmt(out[f'{case}_ratio_vs_{p.key}'], '>8.2f')}"
                       for p in peers)
        print(row + f" {fmt(out[f'{case}_direct_ms'], '>9.2f')} {fmt(out[f'{case}_max_abs_err'], '>9.2e')} "
                    f"{out[f'{case}_compile_s']:>9.1f} {out[f'{case}_gpu_steps']}/{out[f'{case}_host_steps']}, "
                    f"{out[f'{case}_winograd_convs']}")


def main(argv=None, open_device=open_cuda, peers=PEERS) -> int:
    args = parse_args(argv)
    from vdla.driver.device import DeviceError
    try:
        device = open_device(args.device)
    except DeviceError as exc:
        print(f"e2e_gpu: {exc}", file=sys.stderr)
        return 2
    builders = model_builders()
    out = {"device": getattr(device, "name", type(device).__name__), "arch": device.arch, "batches": args.batches,
           "image": args.image, "repeat": args.repeat, "warmup": args.warmup}
    missing, errors, cases = {}, [], []
    for name in args.models:
        for batch in args.batches:
            case = case_name(name, batch)
            model = getattr(builders, name)(batch=batch, image=args.image, classes=args.classes)
            out.update(bench_case(case, model, device, args.device, peers, args, missing, errors))
            cases.append(case)
    out["peer_missing"], out["errors"] = missing, errors
    print(f"{device!r}; host to host, median of {args.repeat} after {args.warmup} warmup calls; peers: "
          + ", ".join(p.label for p in peers))
    print_table(out, cases, peers)
    for key, why in missing.items():
        print(f"peer {key} missing: {why}")
    for what in errors:
        print(f"WRONG: {what}")
    if args.json:
        print(json.dumps(out))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
