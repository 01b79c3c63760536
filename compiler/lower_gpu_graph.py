"""Graph -> GPU programs: each top-level node (a fused group or a single op) becomes a tensor
expression from vdla.compiler.topi, scheduled by topi.gpu.schedule_for_gpu and compiled by
codegen.nvptx.build_cuda into a GpuProgram (PTX and its launches). What the GPU path cannot take
(an op topi lacks, a schedule the GPU checks refuse) stays a host step, with the reason recorded
for `vdla info`. Identical groups share one program, as on the CPU (lower_graph.py).

A 3x3 stride-1 convolution where Winograd pays (lower_gpu_winograd.py) runs as its three
Winograd kernels: its step passes the weight's compile-time transform instead of the weight,
which graph.constants gains (and loses the weight, when nothing else reads it). Should the
Winograd build fail, the group is compiled direct.
"""
from __future__ import annotations

from . import lower_ops
from .graph.ir import Graph
from .graph.passes.memory_plan import ALIAS_OPS
from .lower_graph import group_signature, kernel_args
from .lower_gpu_winograd import RULES as WINOGRAD_RULES
from .lower_gpu_winograd import add_transformed_weight, winograd_args, winograd_conv, winograd_node


def lower_graph_gpu(graph: Graph, arch: str, log=None, winograd: bool = True) -> tuple[dict, list, dict]:
    """-> (gpu steps: node -> {"program": index, "args": tensor names}, [GpuProgram], host reasons).
    winograd=False compiles every convolution direct."""
    steps, programs, reasons = {}, [], {}
    by_signature = {}          # signature -> (program index, whether it is the Winograd form)
    replaced = set()           # weights whose Winograd transform a step passes instead
    in_place = set(graph.meta.get("memory_plan", {}).get("parts", ()))   # a Concat that copies nothing
    for node in graph.nodes:
        if node.op in ALIAS_OPS or node.name in in_place:
            continue
        if node.host_only:
            reasons[node.name] = node.host_only
            continue
        args = kernel_args(graph, node)
        sig = group_signature(graph, node, args)
        plan = winograd_conv(graph, node) if winograd else None
        if sig in by_signature:
            index, uses_winograd = by_signature[sig]
            if uses_winograd:
                add_transformed_weight(graph, plan)
                replaced.add(plan.weight)
            steps[node.name] = {"program": index, "args": winograd_args(plan, args) if uses_winograd else args}
            continue
        name = f"g{len(programs)}_{node.attrs.get('pattern', node.op).replace('+', '_').lower()}"
        program, uses_winograd = None, False
        if plan is not None:
            program = _build_winograd(graph, node, args, plan, name, arch, log)
            uses_winograd = program is not None
        if program is None:
            program, why = lower_ops.build_or_reason(lambda: _build(graph, node, args, name, arch),
                                                     "GPU BUILD FAILED")
            if program is None:
                reasons[node.name] = why
                continue
        by_signature[sig] = (len(programs), uses_winograd)
        steps[node.name] = {"program": len(programs), "args": winograd_args(plan, args) if uses_winograd else args}
        if uses_winograd:
            replaced.add(plan.weight)
        programs.append(program)
        if log:
            log(f"compiled {name} ({len(program.kernels)} kernels{', Winograd' if uses_winograd else ''}) "
                f"for {node.name}")
    _drop_unread(graph, replaced, steps)
    return steps, programs, reasons


def _build(graph, node, args, name, arch, rules=None):
    from .codegen.nvptx.build import build_cuda
    from .topi.gpu import schedule_for_gpu
    tensors, outputs = lower_ops.group_to_te(graph, node, args, {**lower_ops.GPU_RULES, **(rules or {})})
    return build_cuda(schedule_for_gpu(outputs), tensors, name, arch=arch)


def _build_winograd(graph, node, args, plan, name, arch, log):
    """The group's Winograd program, or None (the weight's transform taken back) when it fails."""
    fresh = plan.transformed not in graph.constants
    add_transformed_weight(graph, plan)
    try:
        return _build(graph, winograd_node(plan, node), winograd_args(plan, args), name, arch, WINOGRAD_RULES)
    except Exception as exc:  # the direct form may still build: say why Winograd did not
        if log:
            log(f"{node.name}: Winograd failed ({type(exc).__name__}: {exc}); compiling it direct")
        if fresh:
            del graph.constants[plan.transformed], graph.types[plan.transformed]
        return None


def _drop_unread(graph, weights, steps):
    """Weights that every reader now takes in their Winograd form leave the artifact."""
    read = {a for st in steps.values() for a in st["args"]}
    for node in graph.nodes:
        if node.name not in steps:     # a host step runs the group's original body
            read.update(i for inner in (node.body if node.op == "Fused" else [node]) for i in inner.inputs)
    for w in weights - read:
        del graph.constants[w]
