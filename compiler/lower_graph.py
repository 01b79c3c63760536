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
from .build import build, build_func, run_passes  # the tensor compiler's entry points
from .graph.ir import Graph, Node
from .graph.passes.memory_plan import ALIAS_OPS


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


def lower_graph(graph: Graph, target, log=None, skip=(), knobs_for=None) -> tuple[dict, dict, dict, dict]:
    """Returns (kernel_steps, objects by triple, kernels index by triple, host reasons).
    Nodes named in `skip` run elsewhere (the accelerator) and are left alone. `knobs_for`:
    a group's outputs -> the schedule knobs of a tuning record, or None for the default's
    (vdla.compiler.tune.CpuTuningUse)."""

    kernel_steps: dict[str, dict] = {}
    host_reasons: dict[str, str] = {}
    compiled: dict[str, object] = {}
    by_signature: dict[str, str] = {}
    in_place = set(graph.meta.get("memory_plan", {}).get("parts", ()))   # a Concat that copies nothing
    for node in graph.nodes:
        if node.op in ALIAS_OPS or node.name in skip or node.name in in_place:
            continue
        if node.host_only:
            host_reasons[node.name] = node.host_only
            continue
        args = kernel_args(graph, node)
        sig = group_signature(graph, node, args)
        if sig in by_signature:
            kernel_steps[node.name] = {"kernel": by_signature[sig], "args": args}
            continue
        name = f"k{len(compiled)}_{node.attrs.get('pattern', node.op).replace('+', '_').lower()}"

        def build_kernel(node=node, args=args, name=name):
            if node.op in lower_ops.LOOP_RULES:
                return build_func(run_passes(lower_ops.group_to_func(graph, node, args, target, name)), target)
            tensors, outputs = lower_ops.group_to_te(graph, node, args, lower_ops.cpu_rules(target))
            schedule = lower_ops.schedule(outputs, target, knobs_for(outputs) if knobs_for else None)
            return build(schedule, tensors, target, name)

        kernel, why = lower_ops.build_or_reason(build_kernel)
        if kernel is None:
            host_reasons[node.name] = why
            continue
        compiled[name] = kernel
        by_signature[sig] = name
        kernel_steps[node.name] = {"kernel": name, "args": args}
        if log:
            log(f"compiled {name} for {node.name}")
    objects = {kernel_abi.kernel_object_key(k.target, name): k.object_code for name, k in compiled.items()}
    index = {}
    for name, k in compiled.items():
        index.setdefault(k.target, {"names": [], "arg_specs": {}})
        index[k.target]["names"].append(name)
        index[k.target]["arg_specs"][name] = kernel_abi.argspec_record(k.arg_specs)
    return kernel_steps, objects, index, host_reasons
