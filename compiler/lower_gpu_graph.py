"""Graph -> GPU programs: each top-level node (a fused group or a single op) becomes a tensor
expression from vdla.compiler.topi, scheduled by topi.gpu.schedule_for_gpu and compiled by
codegen.nvptx.build_cuda into a GpuProgram (PTX and its launches). What the GPU path cannot take
(an op topi lacks, a schedule the GPU checks refuse) stays a host step, with the reason recorded
for `vdla info`. Identical groups share one program, as on the CPU (lower_graph.py).
"""
from __future__ import annotations

from . import lower_ops
from .graph.ir import Graph
from .graph.passes.memory_plan import ALIAS_OPS
from .lower_graph import group_signature, kernel_args
from .lower_ops import NotLowerable


def lower_graph_gpu(graph: Graph, arch: str, log=None) -> tuple[dict, list, dict]:
    """-> (gpu steps: node -> {"program": index, "args": tensor names}, [GpuProgram], host reasons)."""
    from .codegen.nvptx.build import build_cuda
    from .topi.gpu import schedule_for_gpu
    steps, programs, reasons, by_signature = {}, [], {}, {}
    for node in graph.nodes:
        if node.op in ALIAS_OPS:
            continue
        args = kernel_args(graph, node)
        sig = group_signature(graph, node, args)
        if sig in by_signature:
            steps[node.name] = {"program": by_signature[sig], "args": args}
            continue
        try:
            tensors, outputs = lower_ops.group_to_te(graph, node, args)
            name = f"g{len(programs)}_{node.attrs.get('pattern', node.op).replace('+', '_').lower()}"
            program = build_cuda(schedule_for_gpu(outputs), tensors, name, arch=arch)
        except NotLowerable as why:
            reasons[node.name] = str(why)
            continue
        except Exception as exc:  # a GPU-compiler failure: keep the model running, say so
            reasons[node.name] = f"GPU BUILD FAILED: {type(exc).__name__}: {exc}"
            continue
        by_signature[sig] = len(programs)
        steps[node.name] = {"program": len(programs), "args": args}
        programs.append(program)
        if log:
            log(f"compiled {name} ({len(program.kernels)} kernels) for {node.name}")
    return steps, programs, reasons
