"""Graph -> kernels: each top-level node (a fused group or a single op) becomes one tensor
expression built from vdla.compiler.topi, scheduled with topi.schedule_for and compiled with
vdla.compiler.build. Nodes the tensor compiler cannot take (an op topi lacks, an attribute
form it does not cover) stay host steps, with the reason recorded for `vdla info`.

Identical groups (same ops, attributes and argument types: ResNet repeats its blocks) share
one kernel, which is most of the compile time saved.
"""
from __future__ import annotations

import hashlib
import json

from vdla.driver import kernel_abi

from . import lower_ops
from .artifact_build import node_record
from .build import build_func, run_passes  # the tensor compiler's entry points
from .graph.ir import Graph, Node
from .graph.passes.memory_plan import ALIAS_OPS
from .kernel_jobs import CompileJob, compile_job, target_parts
from .process_pool import SpawnedPool


def group_signature(graph: Graph, node: Node, args: list[str]) -> str:
    """A key equal for two top-level nodes exactly when one compiled kernel serves both: the
    same ops and attributes, arguments of the same types in the same places, and the same
    values for the 0-d constants (kernel_args leaves them out: they are compiled in as
    literals). Tensor names do not matter. The CPU and GPU lowerings share kernels by it."""
    body = node.body if node.op == "Fused" else [node]
    rename = {name: f"a{i}" for i, name in enumerate(args)}
    for inner in body:
        for n in inner.inputs:
            c = graph.constants.get(n) if n else None
            if c is not None and c.ndim == 0 and n not in rename:
                rename[n] = f"literal {c.dtype} {c.item()!r}"
    records = []
    for inner in body:
        r = node_record(inner)
        for n in r["inputs"] + r["outputs"]:
            rename.setdefault(n, f"t{len(rename)}")
        r["inputs"] = [rename.get(n, "") for n in r["inputs"]]
        r["outputs"] = [rename[n] for n in r["outputs"]]
        r.pop("name")
        records.append(r)
    types = [str(graph.types[a]) for a in args]
    text = json.dumps([records, types], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def kernel_args(graph: Graph, node: Node) -> list[str]:
    """Kernel ABI order: the group's external inputs, each once (Mul(x, x) reads one argument),
    then its outputs. 0-d constants are not arguments: they are compiled in as literals."""
    inputs = [n for n in node.inputs if n and not (n in graph.constants and graph.constants[n].ndim == 0)]
    return list(dict.fromkeys(inputs)) + [o for o in node.outputs if o]


def lower_graph(graph: Graph, target, log=None, skip=(), knobs_for=None, jobs: int = 1,
                progress: bool | None = False) -> tuple[dict, dict, dict, dict]:
    """Returns (kernel_steps, objects by triple, kernels index by triple, host reasons).
    Nodes named in `skip` run elsewhere (the accelerator) and are left alone. `knobs_for`:
    a group's outputs -> the schedule knobs of a tuning record, or None for the default's
    (vdla.compiler.tune.CpuTuningUse). `jobs` > 1: the kernels compile side by side on that
    many spawned processes (kernel_jobs), each the same as it compiles here. `progress`: a bar
    of the kernels compiled (process_pool.SpawnedPool's)."""

    host_reasons: dict[str, str] = {}
    built: dict[str, object] = {}           # kernel name -> CompiledKernel, or why it failed
    served: list[tuple] = []                # (node, its args, its kernel's name), in the graph's order
    queued: list[tuple] = []                # (CompileJob, the node it is for)
    by_signature: dict[str, str] = {}
    in_place = set(graph.meta.get("memory_plan", {}).get("parts", ()))   # a Concat that copies nothing

    def done(name: str, result, node: Node) -> None:
        built[name] = result
        if log and not isinstance(result, str):
            log(f"compiled {name} for {node.name}")

    for node in graph.nodes:
        if node.op in ALIAS_OPS or node.name in skip or node.name in in_place:
            continue
        if node.host_only:
            host_reasons[node.name] = node.host_only
            continue
        args = kernel_args(graph, node)
        sig = group_signature(graph, node, args)
        if sig in by_signature:
            served.append((node, args, by_signature[sig]))
            continue
        name = f"k{len(by_signature)}_{node.attrs.get('pattern', node.op).replace('+', '_').lower()}"
        if node.op in lower_ops.LOOP_RULES:
            kernel, why = lower_ops.build_or_reason(
                lambda: build_func(run_passes(lower_ops.group_to_func(graph, node, args, target, name)), target))
        else:
            kernel, why = lower_ops.build_or_reason(lambda: _job(graph, node, args, target, knobs_for, name))
        if why is not None:
            host_reasons[node.name] = why
            continue                        # a later node of this signature tries again, as this one did
        by_signature[sig] = name
        served.append((node, args, name))
        if isinstance(kernel, CompileJob):
            queued.append((kernel, node))
        else:
            done(name, kernel, node)
    with SpawnedPool(max(1, min(jobs, len(queued))), progress) as pool:
        for (job, node), result in zip(queued, pool.map(compile_job, [j for j, _ in queued], "CPU kernels", "kernel")):
            done(job.name, result, node)
    kernel_steps: dict[str, dict] = {}
    for node, args, name in served:
        if isinstance(built[name], str):
            host_reasons[node.name] = built[name]
        else:
            kernel_steps[node.name] = {"kernel": name, "args": args}
    compiled = {name: built[name] for name in by_signature.values() if not isinstance(built[name], str)}
    objects = {kernel_abi.kernel_object_key(k.target, name): k.object_code for name, k in compiled.items()}
    index = {}
    for name, k in compiled.items():
        index.setdefault(k.target, {"names": [], "arg_specs": {}})
        index[k.target]["names"].append(name)
        index[k.target]["arg_specs"][name] = kernel_abi.argspec_record(k.arg_specs)
    return kernel_steps, objects, index, host_reasons


def _job(graph: Graph, node: Node, args: list[str], target, knobs_for, name: str) -> CompileJob:
    """The node's tensor expressions and schedule knobs, to compile here or on a worker."""
    tensors, outputs = lower_ops.group_to_te(graph, node, args, lower_ops.cpu_rules(target))
    return CompileJob(tensors, outputs, knobs_for(outputs) if knobs_for else None, target_parts(target), name)
