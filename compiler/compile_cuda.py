"""ONNX model -> GPU artifact: the CUDA pipeline top to bottom.

import -> graph passes without the CPU's NCHWc packing (the GPU schedules take NCHW) -> memory
plan -> a GpuProgram per fused group (lower_gpu_graph.py), host steps for the rest -> artifact.
The deploy runtime runs its GPU steps on a CUDA device with the activations resident in device
memory (vdla.driver.gpu_steps).
"""
from __future__ import annotations

import time

from vdla.driver import gpu_limits as limits

from .artifact_build import make_artifact
from .frontend import import_onnx
from .graph import optimize
from .lower_gpu_graph import lower_graph_gpu
from .target import TargetError


def host_gpu_arch() -> str | None:
    """This machine's GPU (device 0) as vdla's newest architecture that runs on it; None where there
    is no GPU (no driver, no cuda-bindings). A GPU older than every architecture vdla emits is a
    TargetError: an artifact compiled by default would not run on it."""
    from vdla.driver.device import DeviceError
    try:
        from vdla.driver.devices.cuda import CudaDevice
        device = CudaDevice()
    except DeviceError:
        return None
    try:
        arch = limits.newest_arch_for(device.arch)
    finally:
        device.close()
    if arch is None:
        raise TargetError(f"this machine's GPU is {device.arch}; vdla emits PTX for {', '.join(limits.ARCHS)}, "
                          "which it cannot run: name the architecture of the GPU the artifact is for "
                          "(--target cuda:sm_NN)")
    return arch


def compile_for_cuda(model, arch: str | None = None, input_shapes: dict | None = None,
                     constant_inputs: dict | None = None, log=None, winograd: bool = True):
    """arch: the PTX target (sm_70 ... sm_90); None: this machine's GPU, else limits.DEFAULT_ARCH.
    winograd=False: every convolution direct (benchmarks/e2e_gpu.py times both)."""
    if arch is None:
        arch = host_gpu_arch() or limits.DEFAULT_ARCH
    elif arch not in limits.ARCHS:
        raise TargetError(f"CUDA architecture {arch!r}: vdla emits PTX for {', '.join(limits.ARCHS)}")
    start = time.perf_counter()
    graph = import_onnx(model, input_shapes=input_shapes, constant_inputs=constant_inputs)
    graph = optimize(graph, layout=False)
    steps, programs, reasons = lower_graph_gpu(graph, arch, log, winograd)
    info = {"seconds": round(time.perf_counter() - start, 3), "pass_log": graph.meta["pass_log"],
            "host_reasons": reasons}
    return make_artifact(graph, {}, {}, {}, {"kind": "cuda", "arch": arch}, None, info,
                         gpu_steps=steps, gpu_programs=[p.to_dict() for p in programs])
