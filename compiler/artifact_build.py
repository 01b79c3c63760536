"""Graph IR + kernels -> Artifact (the file vdla.driver runs).

The execution plan (vdla.driver.plan.Plan) lists one step per top-level node in order: a
KernelStep (a compiled function called on the node's buffers), a VdlaStep (an accelerator
program), a GpuStep (a GPU program launched on them), a HostStep (numpy, for ops without a
kernel), an AliasStep (reshape-like: the output is a view of the input's bytes) or a PartsStep
(a Concat or Split the memory plan laid out side by side: no copy). Tensors
get their planned arena offsets. The header is complete when make_artifact returns: nothing
edits it afterwards.
"""
from __future__ import annotations

import platform
import time

import numpy as np

from vdla.driver.artifact import FORMAT_VERSION, Artifact
from vdla.driver.kernel_abi import aligned
from vdla.driver.header_fields import nbytes
from vdla.driver.plan import (AliasStep, GpuStep, HostStep, KernelStep, PartsStep, Plan, PlannedTensor,
                              ValueSpec, VdlaStep)

from .graph.ir import Graph, GraphError, Node
from .graph.passes.memory_plan import ALIAS_OPS, PART_OPS


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def node_record(node: Node) -> dict:
    attrs = {k: _jsonable(v) for k, v in node.attrs.items() if k not in ("body", "pattern")}
    return {"op": node.op, "name": node.name, "inputs": list(node.inputs),
            "outputs": list(node.outputs), "attrs": attrs}


def _spec(graph: Graph, name: str) -> ValueSpec:
    t = graph.types[name]
    return ValueSpec(name, tuple(t.shape), t.dtype, t.kind)


def _versions() -> dict:
    import llvmlite
    import onnx
    from importlib.metadata import PackageNotFoundError, version
    try:
        vdla_version = version("vdla")
    except PackageNotFoundError:
        vdla_version = "unknown"
    return {"vdla": vdla_version, "numpy": np.__version__, "llvmlite": llvmlite.__version__,
            "onnx": onnx.__version__, "python": platform.python_version()}


def make_artifact(graph: Graph, kernel_steps: dict, objects: dict[str, bytes], kernels_index: dict,
                  target: dict, hardware: dict | None, compile_info: dict | None = None,
                  vdla_steps: dict | None = None, vdla_programs: list | None = None,
                  gpu_steps: dict | None = None, gpu_programs: list | None = None,
                  vdla_programs_1vt: list | None = None) -> Artifact:
    """`kernel_steps` maps a node name to {"kernel": function name, "args": tensor names};
    `vdla_steps` maps an accelerator node to {"program": index into vdla_programs, "args"};
    `vdla_programs_1vt` are the same programs with one virtual thread (for profiles);
    `gpu_steps` a GPU node to {"program": index into gpu_programs (GpuProgram dicts), "args"};
    other nodes become host or alias steps."""
    plan_meta = graph.meta.get("memory_plan")
    if plan_meta is None:
        raise GraphError("make_artifact needs a memory plan: run the plan_memory pass first")
    plan = Plan(
        name=graph.name,
        inputs=tuple(_spec(graph, n) for n in graph.inputs),
        outputs=tuple(_spec(graph, n) for n in graph.outputs),
        tensors={name: PlannedTensor(tuple(graph.types[name].shape), graph.types[name].dtype, offset,
                                     nbytes(tuple(graph.types[name].shape), graph.types[name].dtype))
                 for name, offset in plan_meta["offsets"].items()},
        dynamic={name: _spec(graph, name) for name in graph.activations() if graph.types[name].dynamic},
        arena_bytes=plan_meta["arena_bytes"],
        naive_bytes=plan_meta["naive_bytes"],
        steps=tuple(_step(node, plan_meta, kernel_steps, vdla_steps or {}, gpu_steps or {})
                    for node in graph.nodes))
    header = {
        "format_version": FORMAT_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": _versions(),
        "target": target,
        "hardware": hardware,
        "kernels": kernels_index,
        "plan": plan.to_dict(),
        "compile": compile_info or {},
    }
    if vdla_programs:
        header["vdla_programs"] = vdla_programs
    if vdla_programs_1vt is not None:
        header["vdla_programs_1vt"] = vdla_programs_1vt
    if gpu_programs:
        header["gpu_programs"] = gpu_programs
    # 0-d stays 0-d; on the CPU kernels' alignment, as a loaded artifact's are
    params = {name: aligned(np.asarray(value, order="C")) for name, value in graph.constants.items()}
    return Artifact(header, params, dict(objects))


def _step(node: Node, plan_meta: dict, kernel_steps: dict, vdla_steps: dict, gpu_steps: dict):
    op = node.attrs.get("pattern", node.op)
    outputs = tuple(o for o in node.outputs if o)
    if node.name in vdla_steps:   # the node record: its host op is the reference semantics
        s = vdla_steps[node.name]
        return VdlaStep(node.name, op, s["program"], tuple(s["args"]), (node_record(node),), outputs)
    if node.name in kernel_steps:
        s = kernel_steps[node.name]
        return KernelStep(node.name, op, s["kernel"], tuple(s["args"]))
    if node.name in gpu_steps:
        s = gpu_steps[node.name]
        return GpuStep(node.name, op, s["program"], tuple(s["args"]))
    offsets, storage_of = plan_meta["offsets"], plan_meta["storage_of"]
    if node.op in ALIAS_OPS and len(outputs) == 1 and node.inputs[0] in offsets and \
            (storage_of.get(node.outputs[0]), offsets.get(node.outputs[0])) == \
            (storage_of[node.inputs[0]], offsets[node.inputs[0]]):
        return AliasStep(node.name, op, node.inputs[0], node.outputs[0])
    if node.name in plan_meta.get("parts", ()):
        ins = tuple(t for t in node.inputs if t)
        whole, parts = (outputs[0], ins) if PART_OPS[node.op] == "inputs" else (ins[0], outputs)
        return PartsStep(node.name, op, whole, parts)
    body = node.body if node.op == "Fused" else [node]
    return HostStep(node.name, op, tuple(node_record(n) for n in body), outputs)
