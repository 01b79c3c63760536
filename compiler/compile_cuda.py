"""ONNX model -> GPU artifact: the CUDA pipeline top to bottom.

import -> graph passes without the CPU's NCHWc packing (the GPU schedules take NCHW) -> memory
plan -> a GpuProgram per fused group (lower_gpu_graph.py), host steps for the rest -> artifact.
The deploy runtime runs its GPU steps on a CUDA device with the activations resident in device
memory (vdla.driver.gpu_steps).
"""
from __future__ import annotations

import time

from vdla.hw import gpu as limits

from .artifact_build import make_artifact
from .frontend import import_onnx
from .graph import optimize
from .lower_gpu_graph import lower_graph_gpu


def compile_for_cuda(model, arch: str = limits.DEFAULT_ARCH, input_shapes: dict | None = None,
                     constant_inputs: dict | None = None, log=None, winograd: bool = True):
    """winograd=False: every convolution direct (benchmarks/e2e_gpu.py times both)."""
    start = time.perf_counter()
    graph = import_onnx(model, input_shapes=input_shapes, constant_inputs=constant_inputs)
    graph = optimize(graph, layout=False)
    steps, programs, reasons = lower_graph_gpu(graph, arch, log, winograd)
    info = {"seconds": round(time.perf_counter() - start, 3), "pass_log": graph.meta["pass_log"],
            "host_reasons": reasons}
    return make_artifact(graph, {}, {}, {}, {"kind": "cuda", "arch": arch}, None, info,
                         gpu_steps=steps, gpu_programs=[p.to_dict() for p in programs])
