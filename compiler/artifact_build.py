"""Graph IR + kernels -> Artifact (the file vdla.driver runs).

The execution plan lists one step per top-level node in order: "kernel" (a compiled function
called on the node's buffers), "gpu" (a GPU program launched on them), "host" (numpy, for ops
without a kernel), or "alias" (reshape-like: the output is a view of the input's bytes).
Tensors get their planned arena offsets.
"""
from __future__ import annotations

import platform
import time

import numpy as np

from vdla.driver.artifact import FORMAT_VERSION, Artifact

from .graph.ir import Graph, GraphError, Node
from .graph.passes.memory_plan import ALIAS_OPS


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


def _spec(graph: Graph, name: str) -> dict:
    t = graph.types[name]
    return {"name": name, "shape": list(t.shape), "dtype": t.dtype, **({"kind": t.kind} if t.kind != "tensor" else {})}


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
                  gpu_steps: dict | None = None, gpu_programs: list | None = None) -> Artifact:
    """`kernel_steps` maps a node name to {"kernel": function name, "args": tensor names};
    `vdla_steps` maps an accelerator node to {"program": index into vdla_programs, "args"};
    `gpu_steps` a GPU node to {"program": index into gpu_programs (GpuProgram dicts), "args"};
    other nodes become host or alias steps."""
    vdla_steps, gpu_steps = vdla_steps or {}, gpu_steps or {}
    plan_meta = graph.meta.get("memory_plan")
    if plan_meta is None:
        raise GraphError("make_artifact needs a memory plan: run the plan_memory pass first")
    steps = []
    for node in graph.nodes:
        op = node.attrs.get("pattern", node.op)
        if node.name in vdla_steps:   # the node record: its host op is the reference semantics
            steps.append({"name": node.name, "op": op, "kind": "vdla", **vdla_steps[node.name],
                          "body": [node_record(node)], "outputs": [o for o in node.outputs if o]})
        elif node.name in kernel_steps:
            steps.append({"name": node.name, "op": op, "kind": "kernel", **kernel_steps[node.name]})
        elif node.name in gpu_steps:
            steps.append({"name": node.name, "op": op, "kind": "gpu", **gpu_steps[node.name]})
        elif node.op in ALIAS_OPS and len([o for o in node.outputs if o]) == 1 and plan_meta["storage_of"].get(node.outputs[0]) == \
                plan_meta["storage_of"].get(node.inputs[0]):
            steps.append({"name": node.name, "op": op, "kind": "alias", "inputs": [node.inputs[0]],
                          "outputs": [node.outputs[0]]})
        else:
            body = node.body if node.op == "Fused" else [node]
            steps.append({"name": node.name, "op": op, "kind": "host",
                          "body": [node_record(n) for n in body],
                          "outputs": [o for o in node.outputs if o]})
    tensors = {name: {"shape": list(graph.types[name].shape), "dtype": graph.types[name].dtype,
                      "offset": offset} for name, offset in plan_meta["offsets"].items()}
    plan = {
        "name": graph.name,
        "inputs": [_spec(graph, n) for n in graph.inputs],
        "outputs": [_spec(graph, n) for n in graph.outputs],
        "tensors": tensors,
        "dynamic": {name: {k: v for k, v in _spec(graph, name).items() if k != "name"}
                    for name in graph.activations() if graph.types[name].dynamic},
        "arena_bytes": plan_meta["arena_bytes"],
        "naive_bytes": plan_meta["naive_bytes"],
        "steps": steps,
    }
    header = {
        "format_version": FORMAT_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": _versions(),
        "target": target,
        "hardware": hardware,
        "kernels": kernels_index,
        "plan": plan,
        "compile": compile_info or {},
    }
    if vdla_programs:
        header["vdla_programs"] = vdla_programs
    if gpu_programs:
        header["gpu_programs"] = gpu_programs
    params = {name: np.asarray(value, order="C") for name, value in graph.constants.items()}   # 0-d stays 0-d
    return Artifact(header, params, dict(objects))
