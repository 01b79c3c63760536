"""End-to-end GPU latency: ResNet-18 and MobileNetV2 (batch 1, fp32, 224x224) compiled with
`--target cuda` and run by the executor on the CUDA device (activations resident on the GPU;
the input copied in and the output copied out on every run), against onnxruntime on the CPU
(2 threads; the peer every benchmark here has) in the same process, plus compile time and the
artifact's steps.

    python benchmarks/e2e_gpu.py [--repeat N] [--json] [--device N]

Needs an NVIDIA GPU with its driver and the gpu extra (pip install -e '.[gpu]'); without one it
says so and exits 2. With --json the last line is one JSON object: per model
{model}_ms, {model}_ort_ms, {model}_ratio_vs_ort (ours / onnxruntime), {model}_max_abs_err,
{model}_compile_s, {model}_gpu_steps, {model}_host_steps, {model}_kernels, and device, arch.
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
    spec = importlib.util.spec_from_file_location("model_builders", ROOT / "tests" / "e2e" / "model_builders.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _arch_for(device) -> str:
    """The newest PTX target vdla emits that the device runs."""
    from vdla.hw import gpu as limits
    have = int(device.arch.removeprefix("sm_"))
    usable = [a for a in limits.ARCHS if int(a.removeprefix("sm_")) <= have]
    if not usable:
        raise SystemExit(f"the GPU is {device.arch}; vdla emits PTX for {', '.join(limits.ARCHS)} only")
    return max(usable, key=lambda a: int(a.removeprefix("sm_")))


def bench_model(name: str, model, device, repeat: int) -> dict:
    from vdla.compiler.compile_cuda import compile_for_cuda
    from vdla.driver.executor import Executor
    start = time.perf_counter()
    artifact = compile_for_cuda(model, arch=_arch_for(device))
    compile_s = time.perf_counter() - start
    spec = artifact.plan["inputs"][0]
    feeds = {spec["name"]: np.random.default_rng(0).standard_normal(spec["shape"]).astype(np.float32)}
    kinds = [s["kind"] for s in artifact.plan["steps"]]
    executor = Executor(artifact, device=device)
    session = ort_session(model, 2)
    ours = executor.run(feeds)[artifact.plan["outputs"][0]["name"]]
    reference = session.run(None, feeds)[0]
    ours_ms, ort_ms = interleaved_median_ms([lambda: executor.run(feeds), lambda: session.run(None, feeds)], repeat)
    return {f"{name}_ms": round(ours_ms, 3), f"{name}_ort_ms": round(ort_ms, 3),
            f"{name}_ratio_vs_ort": round(ours_ms / ort_ms, 3),
            f"{name}_max_abs_err": float(np.abs(ours - reference).max()),
            f"{name}_compile_s": round(compile_s, 2), f"{name}_gpu_steps": kinds.count("gpu"),
            f"{name}_host_steps": kinds.count("host"),
            f"{name}_kernels": sum(len(p["kernels"]) for p in artifact.header.get("gpu_programs", []))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    args = parser.parse_args(argv)
    from vdla.driver.device import DeviceError
    from vdla.driver.devices.cuda import CudaDevice
    try:
        device = CudaDevice(args.device)
    except DeviceError as exc:
        print(f"e2e_gpu: {exc}", file=sys.stderr)
        return 2
    builders = _builders()
    out = {"device": device.name, "arch": device.arch}
    for name, build in (("resnet18", builders.resnet18), ("mobilenetv2", builders.mobilenetv2)):
        out.update(bench_model(name, build(), device, args.repeat))
    print(f"{device!r}")
    print(f"{'model':<12} {'vdla ms':>9} {'ort ms':>9} {'ratio':>6} {'max err':>9} {'compile s':>9} gpu/host steps")
    for name in ("resnet18", "mobilenetv2"):
        print(f"{name:<12} {out[f'{name}_ms']:>9.2f} {out[f'{name}_ort_ms']:>9.2f} {out[f'{name}_ratio_vs_ort']:>6.2f} "
              f"{out[f'{name}_max_abs_err']:>9.2e} {out[f'{name}_compile_s']:>9.1f} "
              f"{out[f'{name}_gpu_steps']}/{out[f'{name}_host_steps']}")
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
